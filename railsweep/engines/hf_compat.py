"""One forward step over a transformers causal LM, across the KV-cache rename.

transformers renamed the ``past_key_values`` argument and output to ``cache``
(5.2x; the old name is deprecated until 5.40). ``vllm==0.33`` pins
``transformers<5.21``, so a node with the ``vllm`` extra runs the old name: both
must work.
"""

from __future__ import annotations

import copy
import functools
import inspect
from typing import Any

import torch
from torch import nn

from railsweep.engines.model_support import base_model


@functools.cache
def _cache_kwarg(forward_cls: type) -> str:
    params = inspect.signature(forward_cls.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _hf_class(model: nn.Module) -> type:
    return type(base_model(model))


def lm_step(model: nn.Module, input_ids, attention_mask, position_ids, cache) -> tuple[torch.Tensor, Any]:
    """Run ``model`` on new tokens with a KV cache; returns (last-position logits [B, V], updated cache)."""
    logits, new_cache = _run(model, input_ids, cache, 1, attention_mask=attention_mask, position_ids=position_ids)
    return logits[:, -1, :], new_cache


def _run(model: nn.Module, input_ids, cache, logits_to_keep: int, **kwargs) -> tuple[torch.Tensor, Any]:
    """One forward pass with a KV cache (None: from scratch): (logits of the last ``logits_to_keep``
    positions, 0 for all, and the updated cache), under either name of the cache argument."""
    out = model(
        input_ids=input_ids,
        use_cache=True,
        logits_to_keep=logits_to_keep,
        **kwargs,
        **{_cache_kwarg(_hf_class(model)): cache},
    )
    new_cache = getattr(out, "cache", None)
    if new_cache is None:
        new_cache = out.past_key_values
    return out.logits, new_cache


def prompt_cache(model: nn.Module, prompt: list[int]) -> tuple[torch.Tensor, Any]:
    """Run ``prompt`` once (batch 1): the logits [V] of its last position and its KV cache."""
    device = next(model.parameters()).device
    head, cache = _run(model, torch.tensor([prompt], device=device), None, 1)
    return head[0, -1].float(), cache


def teacher_forced(
    model: nn.Module, first: torch.Tensor, cache, continuations: list[list[int]]
) -> list[torch.Tensor]:
    """Logits ``[len(c), V]`` predicting each token of each continuation ``c`` after a prompt whose
    last logits and cache :func:`prompt_cache` returned (the cache is copied, never changed).

    The continuations (but their last token) run as one right-padded batch over copies of the
    prompt's cache: under causal attention a pad after a token cannot change that token's
    logits, so no attention mask is needed; only their positions are projected onto the vocabulary.
    """
    width = max((len(c) for c in continuations), default=0) - 1
    if width <= 0:
        return [first[None, :].expand(len(c), -1).clone() for c in continuations]
    ids = torch.zeros(len(continuations), width, dtype=torch.long, device=first.device)
    for b, c in enumerate(continuations):
        ids[b, : max(0, len(c) - 1)] = torch.as_tensor(c[:-1], dtype=torch.long)
    rows = copy.deepcopy(cache)
    if len(continuations) > 1:
        rows.batch_repeat_interleave(len(continuations))
    rest, _ = _run(model, ids, rows, 0)
    return [
        torch.cat([first[None, :], rest[b, : max(0, len(c) - 1)].float()])[: len(c)]
        for b, c in enumerate(continuations)
    ]
