"""Tiny randomly initialised models of the three supported families, with the features that
matter to railsweep's own attention paths (grouped-query heads, partial rotary, Gemma 3's
query/key norms and query_pre_attn_scalar scaling, sliding-window layers), built by the library's one
tiny-model factory (:func:`railsweep.miniworld.models.family_config`)."""

from __future__ import annotations

import torch

from railsweep.miniworld.models import family_config as factory_config

VOCAB = 50


def family_config(family: str, **extra):
    common = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        max_position_embeddings=256,
        initializer_range=0.2,
        pad_token_id=0,
    )
    if family == "llama":  # grouped-query attention: 4 query heads over 2 key/value heads
        return factory_config("llama", **common, num_key_value_heads=2, head_dim=16, **extra)
    if family == "gemma3":  # query/key norms, query_pre_attn_scalar scaling, sliding-window layers
        return factory_config(
            "gemma",
            **common,
            num_key_value_heads=1,
            head_dim=16,
            query_pre_attn_scalar=24,
            sliding_window=extra.pop("sliding_window", 128),
            **extra,
        )
    return factory_config("neox", **common, rotary_pct=0.5, **extra)  # partial rotary, fused qkv


def family_model(family: str, seed: int = 0, **extra):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    cfg = family_config(family, **extra)
    cfg._attn_implementation = "sdpa"
    return AutoModelForCausalLM.from_config(cfg).eval()
