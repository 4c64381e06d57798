"""Observed generation at several temperatures: the ``temperature`` strategy's readout, per item.

Per model and tau, m samples per item with the readout's seeds (the same at every tau), graded by the
task; tau = 0 is one greedy decode counted m times. Besides the solve probability c / m, the share of
samples that reproduce the gold chain of thought verbatim (whitespace-normalised) is kept: that is the
event the survival theory's P(T) describes, while a correct answer can also come by another road.
:func:`observed_from_tables` reads the same back from a sweep cell's tables, without torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from railsweep.engines.base import Sample
from railsweep.errors import DataError


@dataclass
class Observed:
    solve: np.ndarray  # (N,) c / m
    verbatim: np.ndarray  # (N,) share of samples equal to the gold chain of thought
    samples: list  # per item, the first sample (at tau = 0: the greedy decode)


def normalise(text: str) -> str:
    return " ".join(text.split())


def observed_from_tables(questions, responses, items: Sequence[int], gold: Sequence[str]) -> Observed:
    """An :class:`Observed` from one cell's per-question and responses tables (results schema, pandas).

    ``items`` are the question indices in the order of ``gold`` (their gold chains of thought). The solve
    probability is the table's c / m; the verbatim share counts the cell's samples (sample_index >= 0;
    at tau = 0 the greedy decode, however many times it is stored); ``samples`` holds each item's first."""
    q = questions.set_index("question_index")
    resp = responses[responses["sample_index"] >= 0].sort_values(["question_index", "sample_index"])
    by_item = dict(tuple(resp.groupby("question_index", sort=False)))
    missing = [i for i in items if i not in q.index or i not in by_item]
    if missing:
        raise DataError(f"the cell's tables have no rows for test item(s) {missing[:5]}")
    solve, verbatim, samples = [], [], []
    for i, g in zip(items, gold):
        rows = by_item[i]
        want = normalise(g)
        solve.append(float(q.at[i, "solve_prob"]))
        verbatim.append(float(np.mean([normalise(t) == want for t in rows["text"]])))
        first = rows.iloc[0]
        samples.append(
            Sample([int(t) for t in first["token_ids"]], str(first["text"]), str(first["finish_reason"]))
        )
    return Observed(solve=np.array(solve), verbatim=np.array(verbatim), samples=samples)
