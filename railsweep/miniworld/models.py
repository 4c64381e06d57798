"""Tiny base models of the paper's three architecture families: railsweep's one tiny-model factory.

:func:`family_config` is the one place that maps a family name to its transformers config class (the tests'
tiny random models are built with it too); :func:`model_config` sizes the miniature world's models, about a
million parameters each, with head_dim 64 so the same checkpoints stay servable by vLLM's CPU build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from railsweep.errors import ConfigError

FAMILIES = ("llama", "neox", "gemma")
# Families family_config() builds: the miniature world's, plus Gemma 1 (no cascade decode path; tests only).
CONFIG_FAMILIES = (*FAMILIES, "gemma1")


@dataclass(frozen=True)
class ModelSize:
    hidden: int = 128  # model width; heads = hidden // 64
    layers: int = 4
    intermediate: int = 512  # MLP width
    max_positions: int = 1024  # longest prompt + response the model is built for


def model_config(family: str, size: ModelSize, vocab_size: int, bos: int, eos: int, pad: int):
    """The transformers config of a tiny ``family`` model (head_dim 64)."""
    if family not in FAMILIES:
        raise ConfigError(f"unknown model family {family!r}; known families: {', '.join(FAMILIES)}")
    if size.hidden % 64:
        raise ConfigError(f"hidden size must be a multiple of head_dim 64, got hidden={size.hidden}")
    heads = size.hidden // 64
    common = dict(
        vocab_size=vocab_size, hidden_size=size.hidden, intermediate_size=size.intermediate,
        num_hidden_layers=size.layers, num_attention_heads=heads, max_position_embeddings=size.max_positions,
        bos_token_id=bos, eos_token_id=eos, pad_token_id=pad,
    )  # fmt: skip
    if family == "llama":
        return family_config(family, **common, num_key_value_heads=heads, head_dim=64, tie_word_embeddings=False)
    if family == "gemma":
        return family_config(
            family, **common, num_key_value_heads=heads, head_dim=64, query_pre_attn_scalar=64,
            sliding_window=size.max_positions, tie_word_embeddings=True,
        )  # fmt: skip
    return family_config(family, **common, use_parallel_residual=True, tie_word_embeddings=False)


def family_config(family: str, **fields: Any):
    """The transformers config of a ``family`` model (one of :data:`CONFIG_FAMILIES`) with ``fields``
    (transformers' own field names, e.g. ``hidden_size``); fields left out take transformers' defaults."""
    classes = dict(llama="LlamaConfig", gemma="Gemma3TextConfig", gemma1="GemmaConfig", neox="GPTNeoXConfig")
    if family not in classes:
        raise ConfigError(f"unknown model family {family!r}; known families: {', '.join(CONFIG_FAMILIES)}")
    import transformers  # heavy: loaded only when a model is configured

    return getattr(transformers, classes[family])(**fields)
