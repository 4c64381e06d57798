"""Questions about a loaded transformers model, for the engines and the trainers: :func:`base_model` and
:func:`cascade_supported` (the engine's cascade decode path and the trainers' block-causal attention share
their model coverage). They read attributes and config only, so this module imports neither torch nor
transformers: the trainers' modules, which command parsers read, import it at their top.
"""

from __future__ import annotations

from typing import Any

# model types whose attention goes through transformers' attention interface with ``cache.update`` and plain
# scaled-dot-product semantics (each covered by a test of the cascade path against the padded one)
SUPPORTED_TYPES = frozenset({"llama", "gpt_neox", "gemma3_text"})

__all__ = ["SUPPORTED_TYPES", "base_model", "cascade_supported"]


def base_model(model: Any) -> Any:
    """The transformers model under a peft wrapper (or the model itself)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def cascade_supported(model: Any, max_len: int) -> bool:
    """Whether ``model`` can decode sequences of up to ``max_len`` tokens on the cascade path."""
    config = base_model(model).config
    if getattr(config, "model_type", None) not in SUPPORTED_TYPES:
        return False
    if getattr(config, "attn_logit_softcapping", None):
        return False
    window = getattr(config, "sliding_window", None)
    return window is None or max_len <= window
