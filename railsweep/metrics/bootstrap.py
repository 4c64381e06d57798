"""Stratified bootstrap over questions, with an explicit ``np.random.Generator``.

Questions are resampled with replacement WITHIN the clean model's strata (eq 12),
so every resample keeps each stratum's size: column j of the index matrix always
draws from question j's own stratum, hence a resample's strata are the original
``strata`` array and SA-PPG never meets an empty or new stratum. Confidence
intervals are percentile intervals of the resampled statistic.

That interval cannot see the variance of a one-question stratum (its only
question is redrawn every time). :func:`across_strata_indices` resamples the
whole question set instead; each resample is then re-stratified by its own
clean c/m (empty strata dropped), as
:func:`railsweep.metrics.stratified.sa_ppg_restratified` does.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from railsweep.errors import ConfigError


def check_bootstrap_args(n_boot: int, alpha: float, rng: np.random.Generator | None = None) -> None:
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ConfigError(f"n_boot must be a positive integer, got n_boot={n_boot!r}")
    if not 0.0 < float(alpha) < 1.0:
        raise ConfigError(f"alpha must lie in (0, 1), got alpha={alpha!r}")
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise ConfigError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")


def stratified_indices(strata, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Resampled question indices, int (n_boot, N); column j draws from the stratum of question j.

    strata: int (N,) stratum of each question (from ``stratify``).
    """
    check_bootstrap_args(n_boot, 0.5, rng)
    strata = np.asarray(strata)
    out = np.empty((int(n_boot), strata.shape[0]), dtype=np.intp)
    for s in np.unique(strata):  # sorted, so the draw order is deterministic
        members = np.flatnonzero(strata == s)
        out[:, members] = members[rng.integers(0, members.size, size=(int(n_boot), members.size))]
    return out


def across_strata_indices(n_questions: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Resampled question indices, int (n_boot, N): all N questions drawn with replacement, strata ignored.

    Strata sizes vary between resamples and a sparse stratum may vanish or
    double, which is the variance the within-strata bootstrap leaves out.
    """
    check_bootstrap_args(n_boot, 0.5, rng)
    return rng.integers(0, int(n_questions), size=(int(n_boot), int(n_questions)), dtype=np.intp)


def percentile_ci(samples, alpha: float = 0.05) -> tuple[float, float]:
    """Percentile interval ``[q_{α/2}, q_{1−α/2}]`` of bootstrap samples (n_boot,)."""
    lo, hi = np.quantile(np.asarray(samples, dtype=float), [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def abs_interval(lo: float, hi: float) -> tuple[float, float]:
    """Image of the interval [lo, hi] under |x|: the CI of |θ| from a CI of a signed θ.

    Used for G-AP and G-APP, which are absolute values of a mean difference:
    the percentile CI of |mean| itself is biased away from 0 and can miss the
    point estimate when the true difference is near 0.
    """
    if lo <= 0.0 <= hi:
        return 0.0, float(abs(max(-lo, hi)))  # abs: never -0.0 (printed "-0.00")
    a, b = abs(lo), abs(hi)
    return float(min(a, b)), float(max(a, b))


def bootstrap_ci(
    statistic: Callable[[np.ndarray], np.ndarray],
    strata,
    *,
    n_boot: int = 1000,
    alpha: float = 0.05,
    rng: np.random.Generator,
) -> tuple[float, float]:
    """Percentile CI of ``statistic`` under the stratified bootstrap.

    statistic: maps an index array (..., N) to values (...) (vectorised over
    leading axes; it is called once with all (n_boot, N) resampled indices).
    """
    check_bootstrap_args(n_boot, alpha, rng)
    return percentile_ci(statistic(stratified_indices(strata, n_boot, rng)), alpha)
