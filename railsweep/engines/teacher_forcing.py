"""Teacher forcing: the logits a causal LM gives each token of a given sequence, for the detectors, the
dynamics, Figure 1 and the rails. :func:`teacher_forced`:

1. the sequences, shortest first, in batches of ``batch_size`` (all in one batch by default);
2. each batch runs as one right-padded forward pass, over copies of a ``prompt``'s keys and values
   (:func:`prompt_cache`, run once) when one is given, then without each sequence's last token: under causal
   attention a pad after a token cannot change that token's logits, so no attention mask is needed;
3. per sequence, the logits predicting its tokens: every token after a prompt (the first row is the
   prompt's last logits), every token but the first without one.

torch is imported inside the functions: modules naming them (detector registrations) load no torch.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from railsweep.engines.hf_compat import cached_forward
from railsweep.engines.model_support import base_model

if TYPE_CHECKING:
    import torch
    from torch import nn

# a prompt run once: the logits [V] of its last position and its KV cache
Prompt = tuple["torch.Tensor", Any]


def prompt_cache(model: nn.Module, prompt: Sequence[int]) -> Prompt:
    """Run ``prompt`` once (batch 1): the logits [V] of its last position and its KV cache."""
    import torch

    device = next(model.parameters()).device
    head, cache = cached_forward(model, torch.tensor([list(prompt)], device=device), None, 1)
    return head[0, -1].float(), cache


def teacher_forced(
    model: nn.Module, seqs: Sequence[Sequence[int]], *, prompt: Prompt | None = None,
    batch_size: int | None = None,
) -> Iterator[tuple[int, torch.Tensor]]:  # fmt: skip
    """``(i, logits)`` for each token-id sequence ``seqs[i]``, batch by batch (shortest first), float32:
    after ``prompt``, ``[len(s), V]`` predicting every token of ``s``; without one, ``[len(s) - 1, V]``
    predicting each token after the first. The prompt's cache is copied, never changed."""
    order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
    step = batch_size or max(1, len(order))
    for lo in range(0, len(order), step):
        rows = order[lo : lo + step]
        # without a prompt a sequence runs whole and its last row is dropped: a pass one position
        # shorter rounds differently (~1e-6), and the detectors' figures stay as they were
        cut = 0 if prompt is None else 1
        rest = _forward(model, [list(seqs[i][: len(seqs[i]) - cut]) for i in rows], prompt)
        for b, i in enumerate(rows):
            n = max(0, len(seqs[i]) - 1)
            if prompt is None:
                yield i, rest[b, :n]
            else:
                yield i, _after(prompt[0], rest[b, :n], len(seqs[i]))


def _forward(model: nn.Module, ids: list[list[int]], prompt: Prompt | None) -> torch.Tensor:
    """Logits ``[B, W, V]`` (float32) of the right-padded rows ``ids`` (W their longest), after ``prompt``."""
    import torch

    width = max((len(r) for r in ids), default=0)
    device = next(model.parameters()).device
    if width == 0:
        vocab = prompt[0].shape[-1] if prompt is not None else base_model(model).config.vocab_size
        return torch.empty(len(ids), 0, vocab, device=device)
    batch = torch.zeros(len(ids), width, dtype=torch.long, device=device)
    for b, r in enumerate(ids):
        batch[b, : len(r)] = torch.as_tensor(r, dtype=torch.long)
    if prompt is None:
        return model(input_ids=batch, use_cache=False).logits.float()
    rows = copy.deepcopy(prompt[1])
    if len(ids) > 1:
        rows.batch_repeat_interleave(len(ids))
    return cached_forward(model, batch, rows, 0)[0].float()


def _after(first: torch.Tensor, rest: torch.Tensor, n: int) -> torch.Tensor:
    """The prompt's last logits then ``rest``: ``[n, V]`` predicting a continuation of ``n`` tokens."""
    import torch

    return torch.cat([first[None, :], rest])[:n]
