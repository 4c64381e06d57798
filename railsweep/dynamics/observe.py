"""Observed generation at several temperatures: the ``temperature`` strategy's readout, per item.

Per model and temperature tau, m samples per item with the readout's seeds (the
same seeds at every tau), graded by the task; tau = 0 is one greedy decode
counted m times. Besides the solve probability c / m, the share of samples that
reproduce the gold chain of thought verbatim (whitespace-normalised) is kept:
that is the event the survival theory's P(T) describes, while a correct answer
can also come by another road.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class Observed:
    solve: np.ndarray  # (N,) c / m
    verbatim: np.ndarray  # (N,) share of samples equal to the gold chain of thought
    samples: list  # per item, the first sample (at tau = 0: the greedy decode)


def normalise(text: str) -> str:
    return " ".join(text.split())


def observe(
    engine,
    task,
    questions: Sequence,
    adapter: str,
    gold: Sequence[str],
    temperatures: Sequence[float],
    *,
    m: int,
    max_new_tokens: int,
    seed: int,
    batch_size: int,
) -> dict[float, Observed]:
    """{tau: Observed} for one model (adapter name in ``engine``); ``gold`` are the gold chains of thought."""
    from railsweep.strategies import build_strategy
    from railsweep.strategies.base import DecodeSettings, EvalContext

    ctx = EvalContext(
        engine=engine,
        task=task,
        adapter=adapter,
        settings=DecodeSettings(m=m, max_new_tokens=max_new_tokens, seed=seed, batch_size=batch_size),
    )
    want = [normalise(g) for g in gold]
    out = {}
    for tau in temperatures:
        outcomes = build_strategy("temperature", {"tau": float(tau)}).run(ctx, questions)
        out[float(tau)] = Observed(
            solve=np.array([o.c / o.m for o in outcomes]),
            verbatim=np.array(
                [np.mean([normalise(s.text) == w for s in o.samples]) for o, w in zip(outcomes, want)]
            ),
            samples=[o.samples[0] for o in outcomes],
        )
    return out
