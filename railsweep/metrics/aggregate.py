"""Every aggregate of one (clean, mitigated) pair with a 95 % interval that holds, its noise floor, and paired comparisons.

Steps of :func:`score_counts`:
  1. per-question solve probabilities (eq 3) and gaps Δ (eq 4); strata of the clean model (eq 12, B bins);
  2. point estimates of all aggregates on the questions, as the paper defines them;
  3. the mean metrics (G-AP, G-APP, A-PPG, Δ±): expanded BCa interval
     (:func:`~railsweep.metrics.bootstrap.bca_ci`) over ``n_boot`` resamples of the
     questions drawn with replacement (each question keeps both its counts, so the readouts' binomial
     noise is inside the resampled spread); G-AP and G-APP via their signed mean;
  4. the stratified metrics (SA-PPG, S-Δ±): jackknife interval, each question left out once and the
     rest re-stratified (:mod:`railsweep.metrics.jackknife`), point ± c·se with c calibrated by a
     simulation from the cell's own fitted population (:mod:`railsweep.metrics.selfcheck`); printed
     only where the plain t-interval covers at least :data:`~railsweep.metrics.selfcheck.CHECK_MIN`
     in that simulation and, at m ≥ 2B, every stratum holds enough questions
     (:func:`~railsweep.metrics.selfcheck.sharp_stratum_min`), else withheld with the reason;
  5. every metric's noise floor (:mod:`railsweep.metrics.floor`): its value for a perfect restoration
     at the cell's m, and for the |Δ| metrics a floor-corrected reading;
  6. stratum occupancy and weight concentration (``stratum_n``, ``sappg_*``).

What the intervals cover (the design value: the estimator's average at the cell's n, m and B) and the
simulations that show it are in docs/metrics.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from railsweep.errors import ConfigError, DataError
from railsweep.metrics._arrays import as_binary, as_counts
from railsweep.metrics.bootstrap import (
    abs_interval,
    across_strata_indices,
    bca_ci,
    check_bootstrap_args,
    expanded_alpha,
    percentile_ci,
)
from railsweep.metrics.concentration import stratum_counts, weight_concentration
from railsweep.metrics.floor import corrected, floors
from railsweep.metrics.ppg import a_ppg, delta_minus, delta_plus
from railsweep.metrics.readout import solve_prob
from railsweep.metrics.selfcheck import (
    CHECK_MIN,
    SHARP_MIN,
    Check,
    fitted_population,
    jackknife_interval,
    self_check,
    sharp_stratum_min,
    too_thin,
)
from railsweep.metrics.stratified import stratify

METRICS: tuple[str, ...] = ("g_ap", "g_app", "a_ppg", "delta_plus", "delta_minus", "sa_ppg", "s_delta_plus",
                            "s_delta_minus")  # fmt: skip
ABS_OF_MEAN = frozenset({"g_ap", "g_app"})  # |mean difference|: bootstrapped signed, then |.|
MEAN_METRICS = ("g_ap", "g_app", "a_ppg", "delta_plus", "delta_minus")
STRATIFIED_METRICS = ("sa_ppg", "s_delta_plus", "s_delta_minus")
CONCENTRATION = ("sparse_questions", "sparse_share", "sparse_weight", "sparse_strata", "concentrated")
PART_OF = {"a_ppg": "abs", "sa_ppg": "abs", "delta_plus": "pos", "s_delta_plus": "pos",
           "delta_minus": "neg", "s_delta_minus": "neg"}  # fmt: skip
MIN_NONZERO = 10  # fewer questions with a nonzero gap part than this: no interval (its resamples are all 0)
NOT_DISTINGUISHABLE = "not distinguishable at this size"
NO_INTERVAL = "no interval at this size"
UNEQUAL_M = "no check: the questions were not all sampled with one m"
NO_INTERVAL_UNEQUAL_M = "no interval: questions sampled with unequal m"


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


def _means(cl: Readouts, co: Readouts, idx: np.ndarray) -> dict[str, np.ndarray]:
    """The mean metrics over the questions ``idx`` (..., N); G-AP and G-APP still signed."""
    delta = solve_prob(co.c, co.m)[idx] - solve_prob(cl.c, cl.m)[idx]
    return {
        "g_ap": np.mean(co.r01[idx], axis=-1) - np.mean(cl.r01[idx], axis=-1),
        "g_app": np.mean(delta, axis=-1),
        "a_ppg": a_ppg(delta),
        "delta_plus": delta_plus(delta),
        "delta_minus": delta_minus(delta),
    }


def _per_question(cl: Readouts, co: Readouts) -> dict[str, np.ndarray]:
    """Each question's value (N,) whose mean is :func:`_means`' metric (G-AP and G-APP signed): the
    influence values of the intervals' acceleration."""
    delta = solve_prob(co.c, co.m) - solve_prob(cl.c, cl.m)
    return {
        "g_ap": co.r01.astype(float) - cl.r01,
        "g_app": delta,
        "a_ppg": np.abs(delta),
        "delta_plus": np.maximum(delta, 0.0),
        "delta_minus": np.maximum(-delta, 0.0),
    }


def _boot_means(cl: Readouts, co: Readouts, idx: np.ndarray, rows: int = 256) -> dict[str, np.ndarray]:
    """:func:`_means` over the resamples ``idx`` (n_boot, N) in blocks of rows, to bound memory."""
    parts = [_means(cl, co, idx[i : i + rows]) for i in range(0, idx.shape[0], rows)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def single_m(*readouts: Readouts) -> int | None:
    """The one m every question of every readout was sampled with, or None (floors and checks need one)."""
    ms = np.unique(np.concatenate([r.m for r in readouts]))
    return int(ms[0]) if ms.size == 1 and ms[0] > 0 else None


def verdict(lo: float, hi: float, why: str = "") -> str:
    """ "lower" (the interval lies below 0), "higher", or "not distinguishable at this size"; without an interval,
    why not (``why``: the withheld interval's reason)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return NO_INTERVAL_UNEQUAL_M if why == UNEQUAL_M else NO_INTERVAL
    return "lower" if hi < 0 else "higher" if lo > 0 else NOT_DISTINGUISHABLE


def withheld_reason(check: float, n: int, m: int | None, B: int, sharp_min: float | None = None) -> str:
    if m is None:
        return UNEQUAL_M
    if check >= CHECK_MIN and too_thin(sharp_min):
        return (
            f"withheld: at m={m} >= 2B (B={B}) a question's stratum is read almost without noise, and the "
            f"sparsest stratum holds {int(sharp_min)} question(s) (needs {SHARP_MIN}): whether other draws of "
            "questions fill it decides the design value, and this cell cannot show how often"
        )
    return (
        f"withheld: the jackknife interval covered {check:.3f} of cells simulated from this cell's "
        f"fitted population at n={n}, m={m}, B={B} (needs {CHECK_MIN:.2f}); the clean strata are too sparse"
    )


def concentration_fields(strata: np.ndarray, B: int) -> dict[str, object]:
    """``stratum_n`` (B ints) and ``sappg_<field>`` of :func:`weight_concentration` for a score dict."""
    conc = weight_concentration(strata, B)
    return {"stratum_n": stratum_counts(strata, B).tolist(), **{f"sappg_{k}": conc[k] for k in CONCENTRATION}}


def nonzero_questions(metric: str, *gaps: np.ndarray) -> int | None:
    """Questions whose part of ``metric`` (|Δ|, max(Δ, 0) or max(−Δ, 0)) is nonzero in any of ``gaps``
    (N,) each; None for G-AP and G-APP, which have no such part."""
    part = PART_OF.get(metric)
    if part is None:
        return None
    f = {"abs": np.abs, "pos": lambda d: np.maximum(d, 0.0), "neg": lambda d: np.maximum(-d, 0.0)}[part]
    return int(np.count_nonzero(np.any([f(np.asarray(g, dtype=float)) > 0 for g in gaps], axis=0)))


def too_sparse_reason(k: int) -> str:
    return (
        f"withheld: only {k} question(s) have a nonzero gap here (needs {MIN_NONZERO}); resamples of so few "
        "nonzero values do not show the spread"
    )


def _hold_sparse(entry: dict[str, object], metric: str, *gaps: np.ndarray) -> dict[str, object]:
    """``entry`` with its interval withheld when fewer than MIN_NONZERO questions carry the metric (this
    reason comes first: with so few nonzero gaps no check of the interval can help)."""
    k = nonzero_questions(metric, *gaps)
    if k is None:
        return entry
    entry = {**entry, "nonzero": k}
    if k >= MIN_NONZERO:
        return entry
    return {**entry, "ci_low": np.nan, "ci_high": np.nan, "interval": "none",
            "why": too_sparse_reason(k)}  # fmt: skip


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


def _stratified_entries(cl: Readouts, a: Readouts, b: Readouts | None, strata: np.ndarray, B: int, alpha: float,
                        rng: np.random.Generator) -> dict[str, dict[str, object]]:  # fmt: skip
    """Jackknife point and calibrated interval of each stratified metric (of a, or a − b), with its simulated check."""
    m, n = single_m(cl, a, *(() if b is None else (b,))), cl.c.size
    d = lambda r: solve_prob(r.c, r.m) - solve_prob(cl.c, cl.m)  # noqa: E731
    check = {part: Check(np.nan, np.nan, np.nan) for part in STRATIFIED_METRICS}
    if m is not None and n > 1:
        rows = [cl, a] if b is None else [cl, a, b]
        pop = fitted_population(np.stack([r.c for r in rows]), m, np.stack([r.r01 for r in rows]))
        check = self_check(pop, n, m, B, alpha, rng, pair=b is not None)
    sharp = sharp_stratum_min(strata, m, B)
    out = {}
    for part in STRATIFIED_METRICS:
        share, crit, _ = check[part]
        point, lo, hi = jackknife_interval(d(a), None if b is None else d(b), strata, part, alpha, crit)
        held = m is None or not share >= CHECK_MIN or not np.isfinite(lo) or too_thin(sharp)
        entry = {
            "value": point,
            "ci_low": np.nan if held else lo,
            "ci_high": np.nan if held else hi,
            "interval": "none" if held else "jackknife",
            "check": share,
            "why": withheld_reason(share, n, m, B, sharp) if held else "",
        }
        if sharp is not None:
            entry["sharp_min"] = sharp
        out[part] = _hold_sparse(entry, part, d(a), *(() if b is None else (d(b),)))
    return out


def score_counts(clean: Readouts, mitigated: Readouts, *, B: int = 50, n_boot: int = 1000, alpha: float = 0.05,
                 rng: np.random.Generator) -> dict[str, object]:  # fmt: skip
    """All aggregates: ``{metric: {"value", "ci_low", "ci_high", "interval", "floor", ...}, "n_questions", ...}``.

    ``interval`` is "bootstrap", "jackknife" or "none" (withheld; ``why`` says why, and
    ``ci_low``/``ci_high`` are NaN); ``check`` the simulated coverage of a stratified metric's
    interval; ``floor`` the metric's value for a perfect restoration at the cell's m (NaN when the
    questions do not share one m); ``corrected`` the floor-corrected reading of the |Δ| metrics.
    """
    check_bootstrap_args(n_boot, alpha, rng)
    n = _check_pair(clean, mitigated)
    strata = stratify(clean.c, clean.m, B)
    point = _means(clean, mitigated, np.arange(n))
    boot = _boot_means(clean, mitigated, across_strata_indices(n, n_boot, rng))
    values = _per_question(clean, mitigated)
    out: dict[str, object] = {}
    for name in MEAN_METRICS:
        value = float(point[name])
        lo, hi = bca_ci(boot[name], value, values[name], alpha)
        if name in ABS_OF_MEAN:
            value, (lo, hi) = abs(value), abs_interval(lo, hi)
        entry = {"value": value, "ci_low": lo, "ci_high": hi, "interval": "bootstrap", "check": np.nan, "why": ""}
        out[name] = _hold_sparse(
            entry, name, solve_prob(mitigated.c, mitigated.m) - solve_prob(clean.c, clean.m)
        )
    out.update(_stratified_entries(clean, mitigated, None, strata, B, alpha, rng))
    m = single_m(clean, mitigated)
    floor = floors(clean.c, m, strata, rng) if m is not None else {}
    fixed = corrected(clean.c, mitigated.c, m, strata) if m is not None else {}
    for name in METRICS:
        out[name]["floor"] = floor.get(name, np.nan)
        if name not in ABS_OF_MEAN:
            out[name]["corrected"] = fixed.get(name, np.nan)
    out.update(
        n_questions=n, n_strata=int(np.unique(strata).size), B=int(B), n_boot=int(n_boot), alpha=float(alpha),
        m=int(m or 0),
    )  # fmt: skip
    out.update(concentration_fields(strata, B))
    return out


def paired_difference_counts(clean: Readouts, a: Readouts, b: Readouts, metric: str, *, B: int = 50,
                             n_boot: int = 1000, alpha: float = 0.05,
                             rng: np.random.Generator) -> dict[str, object]:  # fmt: skip
    """metric(a) − metric(b) on the same questions, with its interval and verdict.

    The mean metrics share every bootstrap resample between a and b; the stratified ones take the
    jackknife of the difference (the same question left out of both), checked like
    :func:`score_counts`' and withheld where the check fails. ``verdict``: "lower" (a scores lower,
    i.e. closer to M_cl, than b), "higher" or "not distinguishable at this size"; with the
    interval withheld, "no interval at this size". ``floor_a``/``floor_b`` are not returned: both
    share the clean cell's floor, which :func:`score_counts` reports.
    """
    if metric not in METRICS:
        raise ConfigError(f"unknown metric {metric!r}; known: {', '.join(METRICS)}")
    check_bootstrap_args(n_boot, alpha, rng)
    n = _check_pair(clean, a, b)
    out: dict[str, object] = {"metric": metric}
    if metric in STRATIFIED_METRICS:
        strata = stratify(clean.c, clean.m, B)
        pa, _, _ = jackknife_interval(
            solve_prob(a.c, a.m) - solve_prob(clean.c, clean.m), None, strata, metric, alpha
        )
        pb, _, _ = jackknife_interval(
            solve_prob(b.c, b.m) - solve_prob(clean.c, clean.m), None, strata, metric, alpha
        )
        e = _stratified_entries(clean, a, b, strata, B, alpha, rng)[metric]
        out.update(value_a=pa, value_b=pb, difference=e["value"], ci_low=e["ci_low"], ci_high=e["ci_high"],
                   interval=e["interval"], check=e["check"], why=e["why"])  # fmt: skip
    else:
        idx = across_strata_indices(n, n_boot, rng)

        def final(r: Readouts, ix: np.ndarray) -> np.ndarray:
            v = (_boot_means(clean, r, ix) if ix.ndim == 2 else _means(clean, r, ix))[metric]
            return np.abs(v) if metric in ABS_OF_MEAN else v

        pa, pb = float(final(a, np.arange(n))), float(final(b, np.arange(n)))
        boot = final(a, idx) - final(b, idx)
        if metric in ABS_OF_MEAN:  # |mean a| − |mean b|: folded resamples, whose bias BCa would read as a shift
            lo, hi = percentile_ci(boot, expanded_alpha(n, alpha))
        else:
            lo, hi = bca_ci(boot, pa - pb, _per_question(clean, a)[metric] - _per_question(clean, b)[metric], alpha)
        entry = {"ci_low": lo, "ci_high": hi, "interval": "bootstrap", "check": np.nan, "why": ""}
        gaps = [solve_prob(r.c, r.m) - solve_prob(clean.c, clean.m) for r in (a, b)]
        out.update(value_a=pa, value_b=pb, difference=pa - pb, **_hold_sparse(entry, metric, *gaps))
    out["verdict"] = verdict(out["ci_low"], out["ci_high"], str(out.get("why", "")))
    return out
