"""TED (Dong et al., Findings ACL 2024): drop samples that stay on the greedy path, then score the rest.

The official ``TED.py`` (baselines.md §1.2, §1.7), per question:

1. one greedy decode ``g`` and the same m samples Identity draws (same seeds);
2. ``G = tokens(g)[:max_length]``, ``L = len(G)``; for each sample k,
   ``D_k = Levenshtein(G, tokens(s_k)[:L])`` on token ids (rapidfuzz);
3. in generation order, skip a sample whose text exactly duplicates an already *kept* sample (``dedup``),
   else skip it if ``D_k <= tau``, else keep it;
4. solve probability = correct kept / kept, and 0 when nothing is kept (the question counts as failed, §1.5).

The outcome keeps all m samples and grades; ``c``/``m`` count the kept ones; ``r01`` stays the first sample's
correctness, kept or not (eq. 1 is defined on the raw sampler). Tokens are the model's own generated ids (the
official script used the codegen tokenizer by mistake, §1.6), cut after the stop string/EOS, which counts as a
token on both sides. ``tau=-1`` with ``dedup=False`` keeps every sample: Identity exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from rapidfuzz.distance import Levenshtein

from railsweep.errors import ConfigError
from railsweep.strategies.base import (
    DecodeSettings,
    EvalContext,
    QuestionOutcome,
    StrategyBase,
    greedy,
    register,
    sample_and_grade,
    sampled_per_question,
)
from railsweep.tasks.base import Question

# Edges of the per-question distance histogram recorded in extras: [0], [1,2], [3,5], [6,10], [11,25], [26,∞).
HIST_EDGES = (0, 1, 3, 6, 11, 26)


@dataclass(frozen=True)
class TEDConfig:
    """TED's filter (official defaults).
    tau: drop a sample whose token edit distance to the greedy decode is <= tau (in tokens; -1 drops none).
    max_length: greedy tokens compared (L = min(max_length, |greedy|)); samples are cut to L.
    dedup: drop exact duplicates (same completion text) of an already kept sample.
    """

    tau: float = 2.0
    max_length: int = 100
    dedup: bool = True
    switched_off: ClassVar[dict[str, Any]] = {"tau": -1, "dedup": False}  # keeps every sample

    def __post_init__(self) -> None:
        if isinstance(self.tau, bool) or not isinstance(self.tau, int | float) or self.tau != self.tau:
            raise ConfigError(f"TED tau must be a number, got tau={self.tau!r}")
        if self.max_length < 1:
            raise ConfigError(f"TED max_length must be >= 1, got max_length={self.max_length}")
        if not isinstance(self.dedup, bool):
            raise ConfigError(f"TED dedup must be true or false, got dedup={self.dedup!r}")


def ted_filter(
    greedy_ids: Sequence[int], samples: Sequence[tuple[Sequence[int], str]], config: TEDConfig
) -> tuple[list[bool], list[int]]:
    """(kept?, distance to the greedy decode) per sample; ``samples``: (ids, text) in generation order."""
    g = list(greedy_ids[: config.max_length])
    cut = len(g)
    kept_texts: set[str] = set()
    keep, dist = [], []
    for ids, text in samples:
        d = Levenshtein.distance(g, list(ids[:cut]))
        dist.append(d)
        ok = not (config.dedup and text in kept_texts) and d > config.tau
        keep.append(ok)
        if ok:
            kept_texts.add(text)
    return keep, dist


def _distance_summary(dist: Sequence[int]) -> dict[str, float | int]:
    d = np.asarray(dist, dtype=float)
    counts, _ = np.histogram(d, bins=[*HIST_EDGES, np.inf])
    names = ["0", "1_2", "3_5", "6_10", "11_25", "26_plus"]
    out: dict[str, float | int] = {f"ted_dist_{n}": int(c) for n, c in zip(names, counts)}
    out["ted_dist_median"] = float(np.median(d)) if d.size else 0.0
    out["ted_dist_mean"] = float(d.mean()) if d.size else 0.0
    return out


@register("ted", TEDConfig, display="TED", tables=("1", "2", "3"),
          roles=("plain_samples", "detection_readout"))
class TED(StrategyBase):
    def run(self, ctx: EvalContext, questions: Sequence[Question]) -> list[QuestionOutcome]:
        greedies = greedy(ctx, questions)
        outcomes = sample_and_grade(ctx, questions)
        for out, g in zip(outcomes, greedies):
            keep, dist = ted_filter(g.token_ids, [(s.token_ids, s.text) for s in out.samples], self.config)
            out.c = sum(k and gr.correct for k, gr in zip(keep, out.grades))
            out.m = sum(keep)
            out.greedy = g
            n_dup = sum(1 for k, d in zip(keep, dist) if not k and d > self.config.tau)  # duplicates only
            out.extras = {"n_kept": out.m, "n_dup": n_dup, "n_close": len(keep) - out.m - n_dup}
            out.extras.update(_distance_summary(dist))
        return outcomes

    def decodes(self, settings: DecodeSettings) -> int:
        return 1 + sampled_per_question(settings)  # the greedy reference, then Identity's samples
