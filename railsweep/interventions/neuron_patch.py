"""Shortcut's intervention: its spec, and the model-side helpers the engine and the localisation share (where
a model's MLP neurons are, how wide each layer is, adapter switching, hooks). The patched forward rewrites the
model's step, not the logits: ``railsweep.engines.neuron_patch``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from railsweep.errors import ConfigError

if TYPE_CHECKING:
    import torch
    from torch import nn

_DOWN_NAMES = ("down_proj", "dense_4h_to_h")  # the MLP attribute holding the down projection


@dataclass(frozen=True)
class NeuronPatchSpec:
    """Overwrite the target's selected MLP neurons, at every position and step, with the live activations of
    a reference model (``reference_adapter=None``: the base); ``neurons``: (layer, indices). ``decode``: the
    throughput-table rate a sweep's price takes for it (the reference runs in lockstep beside the target)."""

    neurons: tuple[tuple[int, tuple[int, ...]], ...]
    reference_adapter: str | None = None
    decode: ClassVar[str] = "patched"


def spec_from_ranking(ranking: Sequence[tuple[int, int]], reference_adapter: str | None) -> NeuronPatchSpec:
    """A NeuronPatchSpec patching the given (layer, neuron) pairs, grouped by layer."""
    by_layer: dict[int, list[int]] = {}
    for layer, j in ranking:
        by_layer.setdefault(int(layer), []).append(int(j))
    neurons = tuple((layer, tuple(sorted(idx))) for layer, idx in sorted(by_layer.items()))
    return NeuronPatchSpec(neurons=neurons, reference_adapter=reference_adapter)


def down_projections(model: nn.Module) -> list[nn.Module]:
    """Every decoder layer's MLP down projection, in order: the longest ``ModuleList`` whose layers have
    ``mlp.down_proj`` (Llama, Gemma 1-4, Mistral, Qwen) or ``mlp.dense_4h_to_h`` (GPT-NeoX/Pythia); under peft
    perhaps a LoRA wrapper, whose input is the same."""
    from torch import nn

    get_base = getattr(model, "get_base_model", None)  # a peft wrapper's transformers model
    base = get_base() if callable(get_base) else model
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
    return [int(getattr(down, "base_layer", down).in_features) for down in down_projections(model)]  # peft


@contextlib.contextmanager
def use_adapter(model: nn.Module, adapter: str | None) -> Iterator[None]:
    """The enclosed forwards with ``adapter`` active (``None``: the base, all a plain model serves); the
    previous one is restored."""
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
def hooks(modules: Sequence[nn.Module], make_hook: Callable[[int], Callable], post: bool = False):
    """Forward pre-hooks (``post``: forward hooks) ``make_hook(i)`` on ``modules[i]``, removed on exit."""
    register = "register_forward_hook" if post else "register_forward_pre_hook"
    handles = [getattr(mod, register)(make_hook(i)) for i, mod in enumerate(modules)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def capture_down_inputs(model: nn.Module) -> Iterator[dict[int, list[torch.Tensor]]]:
    """Record every layer's down-projection input during the enclosed forwards: ``layer -> [fp32 [B, L,
    d_mlp] per forward]``. A forward (post) hook sees the input after every pre-hook: patched as patched."""
    store: dict[int, list[torch.Tensor]] = {}

    def make(i: int):
        def hook(_mod, args, _out):
            store.setdefault(i, []).append(args[0].detach().float().clone())

        return hook

    with hooks(down_projections(model), make, post=True):
        yield store
