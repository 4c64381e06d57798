"""Shortcut-neuron patching: a target model whose selected MLP neurons carry a reference model's activations.

A "neuron" is one channel of the input of the MLP down projection (Llama/Gemma
``mlp.down_proj``, GPT-NeoX ``mlp.dense_4h_to_h``), i.e. act(gate(x))·up(x) or
act(dense_h_to_4h(x)) (baselines.md §3.2). Patching follows the official
``_greedy_search`` (baselines.md §3.6, §3.9) at every forward, prefill included:

1. run the reference (adapter disabled, or another named adapter) on the same
   input ids, attention mask and positions, with its own KV cache, recording
   the selected channels of every patched layer's down-projection input;
2. run the target (``adapter``) with forward pre-hooks that overwrite those
   channels with the recorded reference values, with the target's KV cache;
3. return the target's last-position logits; the engine picks the next token
   and feeds it to both models on the next call (the reference is thereby
   teacher-forced on the target's trajectory; its own stream is never patched).

One copy of the weights serves both models: a peft model is switched between
adapters (``disable_adapter()`` for the base). Hooks live only for the duration
of one forward, so nothing leaks into other requests served by the same model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from railsweep.engines._hf_compat import base_model, lm_step
from railsweep.engines.base import NeuronPatchSpec
from railsweep.errors import ConfigError

# (attribute of the decoder layer holding the MLP, attribute of the MLP holding the down projection)
_DOWN_NAMES = ("down_proj", "dense_4h_to_h")

Forward = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Any], tuple[torch.Tensor, Any]]


def down_projections(model: nn.Module) -> list[nn.Module]:
    """The MLP down-projection module of every decoder layer, in layer order.

    Finds the decoder-layer ``ModuleList`` whose layers have ``mlp.down_proj``
    (Llama, Gemma 1-4, Mistral, Qwen) or ``mlp.dense_4h_to_h`` (GPT-NeoX/Pythia).
    Under peft the returned module may be a LoRA wrapper; its input is the
    down projection's input either way.
    """
    base = base_model(model)
    best: list[nn.Module] = []
    for _, mod in base.named_modules():
        if not isinstance(mod, nn.ModuleList) or len(mod) <= len(best):
            continue
        downs = []
        for layer in mod:
            mlp = getattr(layer, "mlp", None)
            down = next((getattr(mlp, n) for n in _DOWN_NAMES if mlp is not None and hasattr(mlp, n)), None)
            if down is None:
                break
            downs.append(down)
        else:
            best = downs
    if not best:
        raise ConfigError(
            f"cannot find MLP down projections (mlp.down_proj / mlp.dense_4h_to_h) in {type(base).__name__}; "
            "shortcut-neuron patching supports the Llama, Gemma and GPT-NeoX layouts"
        )
    return best


def mlp_widths(model: nn.Module) -> list[int]:
    """d_mlp (the down projection's input width) of every layer."""
    widths = []
    for down in down_projections(model):
        base = getattr(down, "base_layer", down)  # peft LoRA wrapper
        widths.append(int(base.in_features))
    return widths


@contextlib.contextmanager
def use_adapter(model: nn.Module, adapter: str | None) -> Iterator[None]:
    """Run the enclosed forwards with ``adapter`` active (``None``: the base, adapter disabled).

    A plain (non-peft) model only serves ``None``. The previously active adapter is restored.
    """
    if not hasattr(model, "disable_adapter"):
        if adapter is not None:
            raise ConfigError(f"adapter {adapter!r} requested but the model has no LoRA adapters")
        yield
        return
    if adapter is None:
        with model.disable_adapter():
            yield
        return
    known = list(getattr(model, "peft_config", {}) or {})
    if adapter not in known:
        raise ConfigError(f"unknown adapter {adapter!r}; the model has {known}")
    previous = model.active_adapter
    model.set_adapter(adapter)
    try:
        yield
    finally:
        if previous != adapter:
            model.set_adapter(previous)


@contextlib.contextmanager
def _hooks(modules: Sequence[nn.Module], make_hook: Callable[[int], Callable]) -> Iterator[None]:
    handles = [mod.register_forward_pre_hook(make_hook(i)) for i, mod in enumerate(modules)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def _call(model: nn.Module, input_ids, attention_mask, position_ids, cache) -> tuple[torch.Tensor, Any]:
    return lm_step(model, input_ids, attention_mask, position_ids, cache)


@dataclass
class PatchCache:
    """The opaque cache the engine threads through: both models' KV caches."""

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
            raise ConfigError(
                f"NeuronPatchSpec neuron index out of range in layer {layer}: "
                f"{min(idx)}..{max(idx)} vs d_mlp={widths[layer]}"
            )
        if layer in index:
            raise ConfigError(f"NeuronPatchSpec lists layer {layer} twice")
        index[layer] = torch.as_tensor(sorted(set(idx)), dtype=torch.long)
    return index


def make_patched_forward(model: nn.Module, spec: NeuronPatchSpec, adapter: str | None) -> Forward:
    """A step function for the engine's decode loop (see the module docstring).

    ``forward(input_ids[B,L], attention_mask[B,L_total], position_ids[B,L], cache)
    -> (logits_last[B,V], cache)``; ``cache`` is ``None`` on the prefill step.
    With no neurons selected it is exactly the target's plain forward (no
    reference pass), so K=0 reproduces the unpatched model.
    """
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
                logits, state.target = _call(model, input_ids, attention_mask, position_ids, state.target)
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
            with use_adapter(model, reference), _hooks(patched, record):
                _, state.reference = _call(model, input_ids, attention_mask, position_ids, state.reference)
            with use_adapter(model, adapter), _hooks(patched, overwrite):
                logits, state.target = _call(model, input_ids, attention_mask, position_ids, state.target)
        return logits, state

    return forward


def spec_from_ranking(ranking: Sequence[tuple[int, int]], reference_adapter: str | None) -> NeuronPatchSpec:
    """A NeuronPatchSpec patching the given (layer, neuron) pairs, grouped by layer."""
    by_layer: dict[int, list[int]] = {}
    for layer, j in ranking:
        by_layer.setdefault(int(layer), []).append(int(j))
    neurons = tuple((layer, tuple(sorted(idx))) for layer, idx in sorted(by_layer.items()))
    return NeuronPatchSpec(neurons=neurons, reference_adapter=reference_adapter)


@contextlib.contextmanager
def capture_down_inputs(model: nn.Module) -> Iterator[dict[int, list[torch.Tensor]]]:
    """Record every layer's down-projection input during the enclosed forwards.

    Yields a dict ``layer -> list of fp32 tensors [B, L, d_mlp]``, one per forward
    in call order. A forward (post) hook sees the input after every pre-hook, so
    patched values are recorded as patched.
    """
    store: dict[int, list[torch.Tensor]] = {}
    downs = down_projections(model)

    def make(i: int):
        def hook(_mod, args, _out):
            store.setdefault(i, []).append(args[0].detach().float().clone())

        return hook

    handles = [mod.register_forward_hook(make(i)) for i, mod in enumerate(downs)]
    try:
        yield store
    finally:
        for h in handles:
            h.remove()
