"""Per-position teacher-forced statistics of a continuation after a prompt: NLL, logit gaps, NLL at tau.

From the logits of the shared :class:`railsweep.detection.nll.TeacherForcer` (its ``forced``), for
continuation token k (position t = k + 1):
- ``nll``: -log softmax(z)[token] (the loss curve L_t of the survival theory);
- ``gap``: top-1 minus top-2 logit (the confidence of the step, whatever the token);
- ``margin``: the token's logit minus the best other logit (> 0 where the token is the argmax);
- ``nll_tau[tau]``: -log softmax(z / tau)[token]; at tau = 0, 0 where the token is the unique argmax
  and inf otherwise (greedy takes the argmax).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from railsweep.errors import ConfigError


@dataclass
class PositionStats:
    token_ids: list[int]
    nll: np.ndarray  # (T,)
    gap: np.ndarray  # (T,)
    margin: np.ndarray  # (T,)
    nll_tau: dict[float, np.ndarray] = field(default_factory=dict)  # tau -> (T,)


def continuation_ids(tokenizer, prompt: str, continuation: str) -> tuple[list[int], list[int]]:
    """(prompt ids, continuation ids) such that prompt ids + continuation ids tokenise prompt + continuation
    (with the engines' special tokens); where the joint tokenisation does not start with the prompt's own ids
    the continuation is tokenised on its own."""
    p = list(tokenizer(prompt)["input_ids"])
    joint = list(tokenizer(prompt + continuation)["input_ids"])
    if joint[: len(p)] == p:
        return p, joint[len(p) :]
    return p, list(tokenizer(continuation, add_special_tokens=False)["input_ids"])


def position_stats(
    forcer, adapter, prompt_ids: Sequence[Sequence[int]], cont_ids: Sequence[Sequence[int]],
    temperatures: Sequence[float] = (), batch_size: int = 8,
) -> list[PositionStats]:  # fmt: skip
    """Per (prompt, continuation) pair, the statistics of the module docstring over the continuation."""
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    if len(prompt_ids) != len(cont_ids):
        raise ConfigError(f"{len(prompt_ids)} prompts but {len(cont_ids)} continuations")
    seqs = [list(p) + list(c) for p, c in zip(prompt_ids, cont_ids)]
    out: list[PositionStats | None] = [None] * len(seqs)
    # the base model when adapter is None
    for i, logits in forcer.forced(seqs, adapter, batch_size):
        start, n = len(prompt_ids[i]), len(cont_ids[i])
        out[i] = _stats(logits[start - 1 : start - 1 + n].double(), list(cont_ids[i]), temperatures)
    return out  # type: ignore[return-value]


def _stats(z, target: list[int], temperatures: Sequence[float]) -> PositionStats:
    import torch

    if not target:
        empty = np.empty(0)
        return PositionStats([], empty, empty, empty, {float(t): empty for t in temperatures})
    tgt = torch.tensor(target, device=z.device)[:, None]
    chosen = z.gather(1, tgt)[:, 0]
    top2 = z.topk(2, dim=1).values
    other = z.scatter(1, tgt, float("-inf")).max(dim=1).values
    nll = -(torch.log_softmax(z, dim=1).gather(1, tgt)[:, 0])
    by_tau = {}
    for t in temperatures:
        t = float(t)
        if t == 0:
            by_tau[t] = torch.where(chosen > other, 0.0, float("inf")).cpu().numpy()
        else:
            by_tau[t] = (-(torch.log_softmax(z / t, dim=1).gather(1, tgt)[:, 0])).cpu().numpy()
    gap, margin = (top2[:, 0] - top2[:, 1]).cpu().numpy(), (chosen - other).cpu().numpy()
    return PositionStats(target, nll.cpu().numpy(), gap, margin, by_tau)
