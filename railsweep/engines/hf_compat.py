"""One forward step over a transformers causal LM, across the KV-cache rename.

transformers renamed the ``past_key_values`` argument and output to ``cache`` (5.2x; the old name is
deprecated until 5.40). ``vllm==0.33`` pins ``transformers<5.21``, so both names must work.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any

from railsweep.engines.model_support import base_model

if TYPE_CHECKING:  # annotations only: the teacher forcing imports this module without torch
    import torch
    from torch import nn


@functools.cache
def _cache_kwarg(forward_cls: type) -> str:
    params = inspect.signature(forward_cls.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def lm_step(model: nn.Module, input_ids, attention_mask, position_ids, cache) -> tuple[torch.Tensor, Any]:
    """Run ``model`` on new tokens with a KV cache; returns (last-position logits [B, V], updated cache)."""
    logits, new_cache = cached_forward(model, input_ids, cache, 1, attention_mask=attention_mask,
                                       position_ids=position_ids)
    return logits[:, -1, :], new_cache


def cached_forward(model: nn.Module, input_ids, cache, logits_to_keep: int, **kwargs) -> tuple[torch.Tensor, Any]:
    """One forward pass with a KV cache (None: from scratch): (logits of the last ``logits_to_keep``
    positions, 0 for all, and the updated cache), under either name of the cache argument."""
    cache_arg = {_cache_kwarg(type(base_model(model))): cache}
    out = model(input_ids=input_ids, use_cache=True, logits_to_keep=logits_to_keep, **kwargs, **cache_arg)
    new_cache = getattr(out, "cache", None)
    return out.logits, out.past_key_values if new_cache is None else new_cache
