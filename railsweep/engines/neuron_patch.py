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
forward only, so nothing leaks into other requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from railsweep.engines._hf_decode import Forward
from railsweep.engines.hf_compat import lm_step
from railsweep.errors import ConfigError
from railsweep.interventions import NeuronPatchSpec
from railsweep.interventions.neuron_patch import down_projections, hooks, mlp_widths, use_adapter


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


def make_patched_forward(model: nn.Module, spec: NeuronPatchSpec, adapter: str | None) -> Forward:
    """The decode loop's step function: ``forward(input_ids[B,L], attention_mask[B,L_total],
    position_ids[B,L], cache) -> (logits_last[B,V], cache)`` (``cache`` None at the prefill). With no neurons
    selected it is the target's plain forward, so K=0 is the unpatched model."""
    downs = down_projections(model)
    index = _layer_index(spec, len(downs), mlp_widths(model))
    reference = spec.reference_adapter
    patched = [downs[layer] for layer in sorted(index)]
    layers = sorted(index)
    device_index: dict[int, torch.Tensor] = {}

    def idx_on(layer: int, device: torch.device) -> torch.Tensor:
        t = device_index.get(layer)
        if t is None or t.device != device:
            t = device_index[layer] = index[layer].to(device)
        return t

    def forward(input_ids, attention_mask, position_ids, cache):
        state = cache if isinstance(cache, PatchCache) else PatchCache()
        if not index:
            with use_adapter(model, adapter):
                logits, state.target = lm_step(model, input_ids, attention_mask, position_ids, state.target)
            return logits, state
        buf: dict[int, torch.Tensor] = {}

        def record(i: int):
            layer = layers[i]

            def hook(_mod, args):
                x = args[0]
                buf[layer] = x[..., idx_on(layer, x.device)].detach().clone()

            return hook

        def overwrite(i: int):
            layer = layers[i]

            def hook(_mod, args):
                x = args[0].clone()
                x[..., idx_on(layer, x.device)] = buf[layer].to(x.dtype)
                return (x, *args[1:])

            return hook

        with torch.no_grad():
            with use_adapter(model, reference), hooks(patched, record):
                _, state.reference = lm_step(model, input_ids, attention_mask, position_ids, state.reference)
            with use_adapter(model, adapter), hooks(patched, overwrite):
                logits, state.target = lm_step(model, input_ids, attention_mask, position_ids, state.target)
        return logits, state

    return forward
