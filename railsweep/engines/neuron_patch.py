"""Shortcut-neuron patching: a target model whose selected MLP neurons carry a reference model's activations.

A "neuron" is one channel of the MLP down projection's input (Llama/Gemma ``mlp.down_proj``, GPT-NeoX
``mlp.dense_4h_to_h``), i.e. act(gate(x))·up(x) or act(dense_h_to_4h(x)) (baselines.md §3.2). Patching follows
the official ``_greedy_search`` (baselines.md §3.6, §3.9) at every forward, prefill included:

1. run the reference (adapter disabled, or another named adapter) on the same input ids, attention mask and
   positions, with its own KV cache, recording the selected channels of every patched layer's down-projection
   input;
2. run the target (``adapter``) with forward pre-hooks that overwrite those channels with the recorded values,
   with the target's KV cache;
3. return the target's last-position logits; the engine feeds the next token to both models (the reference is
   thereby teacher-forced on the target's trajectory; its own stream is never patched).

One copy of the weights serves both models (a peft model switched between adapters); hooks live for one
forward only, so nothing leaks into other requests. :class:`NeuronPatch` is the pair of forwards; the engine
runs it on the shared-prefix cache (:class:`~railsweep.engines._cascade.CascadeStepper` with ``twin``: one
cache holds both models' layers) where the model allows, else on the padded path (:func:`make_patched_forward`,
two caches in a :class:`PatchCache`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import nn

from railsweep.engines._hf_decode import Forward
from railsweep.engines.hf_compat import lm_step
from railsweep.errors import ConfigError
from railsweep.interventions import NeuronPatchSpec
from railsweep.interventions.neuron_patch import down_projections, hooks, mlp_widths, use_adapter

T = TypeVar("T")


@dataclass
class PatchCache:
    """Both models' KV caches, opaque to the engine."""

    target: Any = None
    reference: Any = None

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Reorder/duplicate rows of both caches (lets the engine prefill each distinct prompt once)."""
        for cache in (self.target, self.reference):
            if cache is not None:
                cache.batch_select_indices(indices)


def _layer_index(spec: NeuronPatchSpec, n_layers: int, widths: Sequence[int]) -> dict[int, torch.Tensor]:
    index: dict[int, torch.Tensor] = {}
    for layer, idx in spec.neurons:
        if not 0 <= layer < n_layers:
            raise ConfigError(f"NeuronPatchSpec layer {layer} out of range: the model has {n_layers} layers")
        if not idx:
            continue
        if min(idx) < 0 or max(idx) >= widths[layer]:
            raise ConfigError(f"NeuronPatchSpec neuron index out of range in layer {layer}: "
                              f"{min(idx)}..{max(idx)} vs d_mlp={widths[layer]}")  # fmt: skip
        if layer in index:
            raise ConfigError(f"NeuronPatchSpec lists layer {layer} twice")
        index[layer] = torch.as_tensor(sorted(set(idx)), dtype=torch.long)
    return index


class NeuronPatch:
    """One patched step of ``model``: :meth:`run` calls a forward as the reference (its selected channels
    recorded), then as the target ``adapter`` (those channels overwritten), and returns the target's result.
    With no neurons selected it runs the target alone, so K=0 is the unpatched model."""

    def __init__(self, model: nn.Module, spec: NeuronPatchSpec, adapter: str | None):
        downs = down_projections(model)
        self.model, self.adapter, self.reference = model, adapter, spec.reference_adapter
        self.index = _layer_index(spec, len(downs), mlp_widths(model))
        self.layers = sorted(self.index)
        self.patched = [downs[layer] for layer in self.layers]
        self._buf: dict[int, torch.Tensor] = {}

    def _hooks(self, record: bool) -> Callable[[int], Callable]:
        """Pre-hooks of the patched layers: record the selected channels, or overwrite them with the record."""

        def make(i: int):
            layer = self.layers[i]

            def hook(_mod, args):
                x = args[0]
                idx = self.index[layer] = self.index[layer].to(x.device)  # a no-op once moved
                if record:
                    self._buf[layer] = x[..., idx].detach().clone()
                    return None
                x = x.clone()
                x[..., idx] = self._buf[layer].to(x.dtype)
                return (x, *args[1:])

            return hook

        return make

    def run(self, forward: Callable[[bool], T]) -> T:
        """``forward(True)`` as the reference, then ``forward(False)`` as the patched target (its result)."""
        if not self.index:
            with use_adapter(self.model, self.adapter):
                return forward(False)
        self._buf.clear()
        with torch.no_grad():
            with use_adapter(self.model, self.reference), hooks(self.patched, self._hooks(record=True)):
                forward(True)
            with use_adapter(self.model, self.adapter), hooks(self.patched, self._hooks(record=False)):
                return forward(False)


def make_patched_forward(patch: NeuronPatch) -> Forward:
    """The padded decode loop's step function: ``forward(input_ids[B,L], attention_mask[B,L_total],
    position_ids[B,L], cache) -> (logits_last[B,V], cache)`` (``cache`` None at the prefill), each model with
    its own KV cache in a :class:`PatchCache`."""
    model = patch.model

    def forward(input_ids, attention_mask, position_ids, cache):
        state = cache if isinstance(cache, PatchCache) else PatchCache()

        def one(reference: bool) -> torch.Tensor:
            name = "reference" if reference else "target"
            logits, past = lm_step(model, input_ids, attention_mask, position_ids, getattr(state, name))
            setattr(state, name, past)
            return logits

        return patch.run(one), state

    return forward
