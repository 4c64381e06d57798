"""Every aggregate of one (clean, mitigated) pair, with stratified-bootstrap CIs, and paired comparisons.

Steps of :func:`score_counts`:
  1. per-question solve probabilities (eq 3) and gaps Δ (eq 4);
  2. strata of the clean model (eq 12, B bins);
  3. point estimates of all aggregates on the original questions;
  4. the same aggregates on ``n_boot`` stratified resamples (same indices for
     every metric); percentile CI per metric, G-AP/G-APP via their signed mean;
  5. SA-PPG on ``n_boot`` across-strata resamples, each re-stratified
     (``sa_ppg_across``: the same point value, a second interval), drawn after
     step 4 from the same generator so step 4's intervals do not move;
  6. stratum occupancy and weight concentration (``stratum_n``, ``sappg_*``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from railsweep.errors import ConfigError, DataError
from railsweep.metrics._arrays import as_binary, as_counts
from railsweep.metrics.bootstrap import (
    abs_interval,
    across_strata_indices,
    check_bootstrap_args,
    percentile_ci,
    stratified_indices,
)
from railsweep.metrics.concentration import stratum_counts, weight_concentration
from railsweep.metrics.ppg import a_ppg, delta_minus, delta_plus
from railsweep.metrics.readout import solve_prob
from railsweep.metrics.stratified import s_delta_minus, s_delta_plus, sa_ppg, sa_ppg_restratified, stratify

METRICS: tuple[str, ...] = (
    "g_ap",
    "g_app",
    "a_ppg",
    "delta_plus",
    "delta_minus",
    "sa_ppg",
    "s_delta_plus",
    "s_delta_minus",
)
ABS_OF_MEAN = frozenset({"g_ap", "g_app"})  # |mean difference|: bootstrapped signed, then |.|
ACROSS = "sa_ppg_across"  # SA-PPG with the across-strata (re-stratified) interval
CONCENTRATION = ("sparse_questions", "sparse_share", "sparse_weight", "sparse_strata", "concentrated")


@dataclass(frozen=True)
class Readouts:
    """One model's per-question readout, aligned by position: c, m (N,) ints and r01 (N,) 0/1."""

    c: np.ndarray
    m: np.ndarray
    r01: np.ndarray

    @classmethod
    def of(cls, c, m, r01, what: str = "") -> Readouts:
        c_arr, m_arr = as_counts(c, m, what)
        r = as_binary(r01, f"r01 ({what})" if what else "r01")
        if r.shape != c_arr.shape:
            raise DataError(f"r01 ({what}) has shape {r.shape} but c has shape {c_arr.shape}")
        return cls(c_arr, m_arr, r)


def _signed(cl: Readouts, co: Readouts, strata: np.ndarray, idx: np.ndarray) -> dict[str, np.ndarray]:
    """Aggregates over the questions ``idx`` (..., N); G-AP and G-APP still signed."""
    delta = solve_prob(co.c, co.m)[idx] - solve_prob(cl.c, cl.m)[idx]
    return {
        "g_ap": np.mean(co.r01[idx], axis=-1) - np.mean(cl.r01[idx], axis=-1),
        "g_app": np.mean(delta, axis=-1),
        "a_ppg": a_ppg(delta),
        "delta_plus": delta_plus(delta),
        "delta_minus": delta_minus(delta),
        "sa_ppg": sa_ppg(delta, strata),
        "s_delta_plus": s_delta_plus(delta, strata),
        "s_delta_minus": s_delta_minus(delta, strata),
    }


def _chunked(
    cl: Readouts, co: Readouts, strata: np.ndarray, idx: np.ndarray, rows: int = 256
) -> dict[str, np.ndarray]:
    """:func:`_signed` over the resamples ``idx`` (n_boot, N) in blocks of rows, to bound memory."""
    parts = [_signed(cl, co, strata, idx[i : i + rows]) for i in range(0, idx.shape[0], rows)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _across(cl: Readouts, co: Readouts, strata: np.ndarray, idx: np.ndarray, B: int, rows: int = 256):
    """SA-PPG (eq 13) on across-strata resamples ``idx`` (n_boot, N), each re-stratified; (n_boot,)."""
    delta = solve_prob(co.c, co.m) - solve_prob(cl.c, cl.m)
    return np.concatenate(
        [
            sa_ppg_restratified(delta[idx[i : i + rows]], strata[idx[i : i + rows]], B)
            for i in range(0, len(idx), rows)
        ]
    )


def concentration_fields(strata: np.ndarray, B: int) -> dict[str, object]:
    """``stratum_n`` (B ints) and ``sappg_<field>`` of :func:`weight_concentration` for a score dict."""
    conc = weight_concentration(strata, B)
    return {"stratum_n": stratum_counts(strata, B).tolist(), **{f"sappg_{k}": conc[k] for k in CONCENTRATION}}


def _check_pair(cl: Readouts, *others: Readouts) -> int:
    n = cl.c.shape[0]
    for o in others:
        if o.c.shape[0] != n:
            raise DataError(
                f"clean and mitigated readouts cover different numbers of questions: {n} vs {o.c.shape[0]}"
            )
    if n == 0:
        raise DataError("no questions to score")
    return n


def score_counts(
    clean: Readouts,
    mitigated: Readouts,
    *,
    B: int = 50,
    n_boot: int = 1000,
    alpha: float = 0.05,
    rng: np.random.Generator,
) -> dict[str, object]:
    """All aggregates with CIs: ``{metric: {"value", "ci_low", "ci_high"}, "n_questions", "n_strata", ...}``."""
    check_bootstrap_args(n_boot, alpha, rng)
    n = _check_pair(clean, mitigated)
    strata = stratify(clean.c, clean.m, B)
    point = _signed(clean, mitigated, strata, np.arange(n))
    boot = _chunked(clean, mitigated, strata, stratified_indices(strata, n_boot, rng))
    out: dict[str, object] = {}
    for name in METRICS:
        lo, hi = percentile_ci(boot[name], alpha)
        value = float(point[name])
        if name in ABS_OF_MEAN:
            value, (lo, hi) = abs(value), abs_interval(lo, hi)
        out[name] = {"value": value, "ci_low": lo, "ci_high": hi}
    lo, hi = percentile_ci(_across(clean, mitigated, strata, across_strata_indices(n, n_boot, rng), B), alpha)
    out[ACROSS] = {"value": out["sa_ppg"]["value"], "ci_low": lo, "ci_high": hi}
    out.update(
        n_questions=n, n_strata=int(np.unique(strata).size), B=int(B), n_boot=int(n_boot), alpha=float(alpha)
    )
    out.update(concentration_fields(strata, B))
    return out


def paired_difference_counts(
    clean: Readouts,
    a: Readouts,
    b: Readouts,
    metric: str,
    *,
    B: int = 50,
    n_boot: int = 1000,
    alpha: float = 0.05,
    rng: np.random.Generator,
) -> dict[str, float | str]:
    """metric(a) − metric(b) on the same questions, CI from the SAME resampled indices for both.

    Also ``frac_a_lower``: the share of resamples in which a scores lower
    (better) than b. For SA-PPG also ``ci_low_across`` / ``ci_high_across``: the
    interval of the difference over across-strata resamples (shared by a and b,
    each re-stratified), drawn after the within-strata ones.
    """
    if metric not in METRICS:
        raise ConfigError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    check_bootstrap_args(n_boot, alpha, rng)
    n = _check_pair(clean, a, b)
    strata = stratify(clean.c, clean.m, B)
    idx = stratified_indices(strata, n_boot, rng)

    def final(r: Readouts, ix: np.ndarray) -> np.ndarray:
        v = (_chunked(clean, r, strata, ix) if ix.ndim == 2 else _signed(clean, r, strata, ix))[metric]
        return np.abs(v) if metric in ABS_OF_MEAN else v

    point_a, point_b = float(final(a, np.arange(n))), float(final(b, np.arange(n)))
    diff = final(a, idx) - final(b, idx)
    lo, hi = percentile_ci(diff, alpha)
    out: dict[str, float | str] = {
        "metric": metric,
        "value_a": point_a,
        "value_b": point_b,
        "difference": point_a - point_b,
        "ci_low": lo,
        "ci_high": hi,
        "frac_a_lower": float(np.mean(diff < 0)),
    }
    if metric == "sa_ppg":
        ix = across_strata_indices(n, n_boot, rng)
        out["ci_low_across"], out["ci_high_across"] = percentile_ci(
            _across(clean, a, strata, ix, B) - _across(clean, b, strata, ix, B), alpha
        )
    return out
