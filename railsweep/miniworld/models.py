"""Tiny base models of the paper's three architecture families.

Each is a plain transformers config (LlamaConfig, GPTNeoXConfig for Pythia,
Gemma3TextConfig for Gemma) shrunk to about a million parameters. Attention
heads keep head_dim 64 so the same checkpoints stay servable by vLLM's CPU
build; everything else is sized by :class:`ModelSize`.
"""

from __future__ import annotations

from dataclasses import dataclass

from railsweep.errors import ConfigError

FAMILIES = ("llama", "neox", "gemma")


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
        vocab_size=vocab_size,
        hidden_size=size.hidden,
        intermediate_size=size.intermediate,
        num_hidden_layers=size.layers,
        num_attention_heads=heads,
        max_position_embeddings=size.max_positions,
        bos_token_id=bos,
        eos_token_id=eos,
        pad_token_id=pad,
    )
    if family == "llama":
        from transformers import LlamaConfig

        return LlamaConfig(**common, num_key_value_heads=heads, head_dim=64, tie_word_embeddings=False)
    if family == "gemma":
        from transformers import Gemma3TextConfig

        return Gemma3TextConfig(
            **common,
            num_key_value_heads=heads,
            head_dim=64,
            query_pre_attn_scalar=64,
            sliding_window=size.max_positions,
            tie_word_embeddings=True,
        )
    from transformers import GPTNeoXConfig

    return GPTNeoXConfig(**common, use_parallel_residual=True, tie_word_embeddings=False)
