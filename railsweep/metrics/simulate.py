"""Cells drawn where the truth is known: a population of questions, designs (n, m, B), exact estimands.

A :class:`Population` holds, for K models (row 0 the clean model M_cl, the others strategies applied to M_co)
and P questions, every question's true solve probability ``p`` (K, P) and its greedy 0/1 readout ``greedy``
(K, P). A *design* draws n questions with replacement and, per model, c ~ Binomial(m, p) per question
(:func:`draw_counts`); the paper's estimators are then computed on r = c/m exactly as on a real cell. Three
values of each metric (docs/metrics.md, "What an interval covers"):

1. **the design value** ``E[θ̂ | n, m, B]``, what every printed interval claims to cover: the estimator's average
   at the design, with the binomial noise floor of m samples and the loss of sparse strata at n questions
   (Monte Carlo: :mod:`railsweep.metrics.selfcheck`, bench/interval_coverage.py);
2. **the large-sample value** at (m, B): the estimator over infinitely many questions (:func:`limit_values`);
3. **the noise-free value**: the metric on the exact p's, strata of p_cl (:func:`noise_free_values`).

The floor of a metric is the gap between 1 and 3 that comes from the readouts alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from railsweep.errors import ConfigError
from railsweep.metrics._arrays import check_bins
from railsweep.metrics._binomial import binom_pmf
from railsweep.metrics.stratified import stratified_mean_rows

CLEAN = 0  # row of the clean model in a Population


@dataclass(frozen=True)
class Population:
    """Known truth: ``p`` float (K, P) solve probabilities, ``greedy`` 0/1 (K, P); row 0 is M_cl."""

    names: tuple[str, ...]
    p: np.ndarray
    greedy: np.ndarray

    def __post_init__(self) -> None:
        p, g = np.asarray(self.p, dtype=float), np.asarray(self.greedy, dtype=float)
        if p.ndim != 2 or p.shape != g.shape or p.shape[0] != len(self.names) or p.shape[0] < 2:
            raise ConfigError(
                f"a population needs p and greedy of shape (K >= 2, P) and K names, got {p.shape}"
            )
        if not np.all((p >= 0) & (p <= 1)):
            raise ConfigError("solve probabilities must lie in [0, 1]")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "greedy", g)

    def index(self, name: str) -> int:
        if name not in self.names:
            raise ConfigError(f"no model {name!r} in the population; known: {', '.join(self.names)}")
        return self.names.index(name)


def check_design(n: int, m: int, B: int) -> tuple[int, int, int]:
    for key, v in (("n", n), ("m", m)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ConfigError(f"{key} must be a positive integer, got {key}={v!r}")
    return int(n), int(m), check_bins(B)


def draw_counts(pop: Population, n: int, m: int, reps: int, rng: np.random.Generator):
    """``reps`` cells of n questions: counts c int (reps, K, n) and greedy readouts (reps, K, n).

    Questions are drawn with replacement from the population (the same question for every
    model of a rep); each model's count is an independent Binomial(m, p) given the question.
    """
    q = rng.integers(0, pop.p.shape[1], size=(int(reps), int(n)))
    p = pop.p[:, q].transpose(1, 0, 2)
    return rng.binomial(int(m), p), pop.greedy[:, q].transpose(1, 0, 2)


def row_strata(c: np.ndarray, m: int, B: int) -> np.ndarray:
    """Strata (eq 12) of counts c int (..., N) out of m: ``min((c·B) // m, B − 1)``."""
    return np.minimum((np.asarray(c, dtype=np.int64) * B) // int(m), B - 1)


def metric_rows(c_cl, c_x, g_cl, g_x, m: int, B: int) -> dict[str, np.ndarray]:
    """Every Table 1–4 metric of row-wise cells: counts (R, N) of the clean and one mitigated model.

    Returns ``{metric: (R,)}`` with G-AP and G-APP as |mean| (eqs 2, 7), the rest as in
    :func:`railsweep.metrics.aggregate.score_counts`.
    """
    d = (np.asarray(c_x, float) - np.asarray(c_cl, float)) / m
    s = row_strata(c_cl, m, B)
    pos, neg = np.maximum(d, 0.0), np.maximum(-d, 0.0)
    return {
        "g_ap": np.abs(np.mean(g_x, axis=-1) - np.mean(g_cl, axis=-1)),
        "g_app": np.abs(d.mean(axis=-1)),
        "a_ppg": np.abs(d).mean(axis=-1),
        "delta_plus": pos.mean(axis=-1),
        "delta_minus": neg.mean(axis=-1),
        "sa_ppg": stratified_mean_rows(np.abs(d), s, B),
        "s_delta_plus": stratified_mean_rows(pos, s, B),
        "s_delta_minus": stratified_mean_rows(neg, s, B),
    }


def _pmf(p: np.ndarray, m: int) -> np.ndarray:
    """Binomial(m, p) pmf of every question, float (P, m + 1)."""
    return binom_pmf(np.arange(m + 1)[None, :], m, np.asarray(p, dtype=float)[:, None])


def limit_values(pop: Population, model: str, m: int, B: int) -> dict[str, float]:
    """The estimators over infinitely many questions at (m, B): exact sums over both counts.

    G-AP and G-APP are |E[...]|; A-PPG and Δ± are E over questions and counts; the
    stratified metrics average E[· | stratum] over every stratum of positive probability.
    """
    k = pop.index(model)
    p_cl, p_x = pop.p[CLEAN], pop.p[k]
    f_cl, f_x = _pmf(p_cl, m), _pmf(p_x, m)  # (P, m+1)
    grid = (np.arange(m + 1)[None, :] - np.arange(m + 1)[:, None]) / m  # [a, b] = (b − a)/m, a clean
    joint = np.einsum("pa,pb->ab", f_cl, f_x) / p_cl.size  # P(c_cl = a, c_x = b)
    pos, neg = np.maximum(grid, 0), np.maximum(-grid, 0)
    strata = row_strata(np.arange(m + 1), m, B)
    w = joint.sum(axis=1)
    out = {
        "g_ap": abs(float(pop.greedy[k].mean() - pop.greedy[CLEAN].mean())),
        "g_app": abs(float(p_x.mean() - p_cl.mean())),
        "a_ppg": float((joint * np.abs(grid)).sum()),
        "delta_plus": float((joint * pos).sum()),
        "delta_minus": float((joint * neg).sum()),
    }
    for key, val in (("sa_ppg", np.abs(grid)), ("s_delta_plus", pos), ("s_delta_minus", neg)):
        per_a = (joint * val).sum(axis=1)
        num = np.bincount(strata, weights=per_a, minlength=B)
        den = np.bincount(strata, weights=w, minlength=B)
        filled = den > 1e-15
        out[key] = float(np.mean(num[filled] / den[filled]))
    return out


def noise_free_values(pop: Population, model: str, B: int) -> dict[str, float]:
    """The metrics on the exact p's (m = ∞): strata of p_cl, gaps p_x − p_cl over the population."""
    k = pop.index(model)
    p_cl = pop.p[CLEAN]
    d = pop.p[k] - p_cl
    s = np.minimum(np.floor(p_cl * B).astype(np.int64), B - 1)[None, :]
    return {
        "g_ap": abs(float(pop.greedy[k].mean() - pop.greedy[CLEAN].mean())),
        "g_app": abs(float(d.mean())),
        "a_ppg": float(np.abs(d).mean()),
        "delta_plus": float(np.maximum(d, 0).mean()),
        "delta_minus": float(np.maximum(-d, 0).mean()),
        "sa_ppg": float(stratified_mean_rows(np.abs(d)[None], s, B)[0]),
        "s_delta_plus": float(stratified_mean_rows(np.maximum(d, 0)[None], s, B)[0]),
        "s_delta_minus": float(stratified_mean_rows(np.maximum(-d, 0)[None], s, B)[0]),
    }
