"""Block-causal attention for training small models on a CPU (pretraining and LoRA).

Why: on a CPU, PyTorch's fused scaled-dot-product kernel does not get faster in bf16 and spends as much time
on the masked half of a causal score matrix as on the visible half; for the miniature world's models (2 heads
of 64, 640-token sequences) it was ~40 % of a bf16 training step. Here the queries are taken in blocks of
:data:`BLOCK` rows, each scored only against the keys up to its own last position (one matmul), the diagonal
block masked: ~60 % of the score matrix at 640 tokens. The arithmetic is the same attention (softmax in fp32);
llama and GPT-NeoX training steps get 10-15 % faster (docs/miniworld.md, "Build time").

It is causal-only (transformers passes no mask to a custom attention function): a batch may carry right
padding (excluded from the loss by the trainers' labels), never left padding. Supported: the model types,
soft-capping and sliding-window limits of the cascade decode path
(:func:`railsweep.engines.model_support.cascade_supported`). Use: ``with training_attention(model, "auto",
device, max_len): ...``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from railsweep.engines.model_support import base_model, cascade_supported
from railsweep.errors import ConfigError

IMPLEMENTATION = "railsweep_block_causal"
ATTENTIONS = ("auto", "native", "block_causal")  # native: the model's own implementation (sdpa)
BLOCK = 128  # query rows per block (64: more Python overhead; 214: more masked work)
_diagonals: dict[tuple[int, str], Any] = {}


def _diagonal(width: int, device):
    """``[width, width]`` additive mask: 0 on and below the diagonal, -inf above it."""
    import torch

    key = (width, str(device))
    if key not in _diagonals:
        _diagonals[key] = torch.full((width, width), float("-inf"), device=device).triu(1)
    return _diagonals[key]


def block_causal_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers attention-interface function: causal attention of ``query[B, Hq, L, D]``
    over ``key``/``value`` ``[B, Hkv, L, D]`` (grouped heads repeated); ``attention_mask``
    is ignored (always None for a custom implementation). Returns ``([B, L, Hq, D], None)``."""
    import torch

    B, Hq, L, D = query.shape
    Hkv = key.shape[1]
    if Hq != Hkv:
        key = key[:, :, None].expand(B, Hkv, Hq // Hkv, L, D).reshape(B, Hq, L, D)
        value = value[:, :, None].expand(B, Hkv, Hq // Hkv, L, D).reshape(B, Hq, L, D)
    scale = D**-0.5 if scaling is None else scaling
    p_drop = dropout if module.training else 0.0
    blocks = []
    for start in range(0, L, BLOCK):
        end = min(L, start + BLOCK)
        scores = torch.matmul(query[:, :, start:end], key[:, :, :end].transpose(-1, -2)).float() * scale
        scores[..., start:end] += _diagonal(end - start, scores.device)
        weights = torch.softmax(scores, dim=-1).to(value.dtype)
        if p_drop:
            weights = torch.nn.functional.dropout(weights, p=p_drop)
        blocks.append(torch.matmul(weights, value[:, :, :end]))
    out = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=2)
    return out.transpose(1, 2).contiguous(), None


def resolve(attention: str, model, device: str, max_len: int) -> str:
    """The implementation to train with: ``"auto"`` is block-causal on a CPU when the model supports it,
    else the model's own (``"native"``); ``"block_causal"`` on an unsupported model is a ConfigError."""
    if attention not in ATTENTIONS:
        raise ConfigError(f"training attention must be one of {', '.join(ATTENTIONS)}; got {attention!r}")
    supported = cascade_supported(model, max_len)
    if attention == "auto":
        return "block_causal" if supported and str(device).startswith("cpu") else "native"
    if attention == "block_causal" and not supported:
        raise ConfigError(
            f"block_causal training attention does not support model type "
            f"{getattr(base_model(model).config, 'model_type', None)!r} (or its soft-capping / sliding "
            f"window shorter than {max_len} tokens); use attention 'native'"
        )
    return attention


@contextmanager
def training_attention(model, attention: str, device: str, max_len: int) -> Iterator[str]:
    """Route ``model``'s attention through the resolved implementation while the block runs;
    the model's own setting is restored afterwards (it is what gets saved and served)."""
    chosen = resolve(attention, model, device, max_len)
    if chosen == "block_causal":
        _register()
    with model_attention(model, IMPLEMENTATION if chosen == "block_causal" else current_attention(model)):
        yield chosen


def current_attention(model) -> str:
    """The attention implementation ``model`` runs now (its config's ``_attn_implementation``)."""
    return base_model(model).config._attn_implementation


@contextmanager
def model_attention(model, implementation: str) -> Iterator[None]:
    """Run a block with ``implementation`` as ``model``'s attention (e.g. its own one, to decode with a KV
    cache between training steps: the block-causal one has no cache), then put the current one back."""
    config = base_model(model).config
    current, config._attn_implementation = config._attn_implementation, implementation
    try:
        yield
    finally:
        config._attn_implementation = current


def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(IMPLEMENTATION, block_causal_attention)


def slow_bf16_warning(device_type: str) -> str | None:
    """A warning when bf16 training is asked for on a CPU without native bf16 arithmetic (AVX512-BF16 or AMX):
    PyTorch then emulates it; on an AVX2-only CPU a [5120 x 128] @ [128 x 512] matmul took 727 ms in bf16
    against 13.6 ms in fp32 (~50x)."""
    if device_type != "cpu":
        return None
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    if capability.startswith("AVX512") and _cpu_flags() & {"avx512_bf16", "amx_bf16"}:
        return None
    return (
        f"bf16 training on this CPU ({capability}, no native bf16) is emulated and can be ~50x slower "
        "than fp32; use precision fp32"
    )


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()
