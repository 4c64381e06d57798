"""Bootstrap over questions, with an explicit ``np.random.Generator``, and its intervals.

- :func:`across_strata_indices`: all N questions drawn with replacement, the resampling of the mean metrics'
  intervals; :func:`stratified_indices`: questions resampled WITHIN the clean model's strata (eq 12), used by
  the memorisation-dynamics gains and the detection report (it cannot see a one-question stratum's variance);
- :func:`bca_ci`: the expanded BCa interval of a mean over questions, what the mean metrics print;
  :func:`percentile_ci` for the ratios and fits of the diagnostics.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from statistics import NormalDist

import numpy as np

from railsweep.errors import ConfigError
from railsweep.metrics._binomial import t_quantile

_N = NormalDist()


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


def expanded_alpha(n: int, alpha: float = 0.05) -> float:
    """The tail level α' of the expanded percentile interval of a mean over ``n`` questions.

    A percentile interval of resampled means is about a z-interval with the plug-in standard
    deviation (divisor n), so at 50–100 questions it covers a point or two short of its level.
    The expanded percentile interval (Hesterberg 2015, "What teachers should know about the
    bootstrap", §4.3) reads the quantiles at α'/2 = Φ(−√(n/(n−1)) · t_{1−α/2, n−1}) instead,
    the tails a Student-t interval with the usual n − 1 divisor would have: α' = 0.0424 at
    n = 50, 0.0461 at 100, 0.0497 at 1,319.
    """
    if n < 2:
        return float(alpha)
    z = math.sqrt(n / (n - 1)) * t_quantile(1 - alpha / 2, n - 1)
    return float(2 * _N.cdf(-z))


TAIL_FLOOR = 1e-12  # bca_ci's smallest tail: the resamples' extremes, where the expanded tails underflow


def bca_ci(samples, point: float, values, alpha: float = 0.05) -> tuple[float, float]:
    """Expanded BCa interval of a mean over questions: what railsweep prints for G-AP, G-APP, A-PPG and Δ±.

    samples: (n_boot,) the statistic on resamples of the questions; point: the statistic on all of
    them; values: (n,) each question's influence on it (for a mean, the question's own value).
    Bias-corrected and accelerated (Efron 1987): z₀ = Φ⁻¹(share of resamples below the point, ties
    half), acceleration a = Σu³ / (6 (Σu²)^{3/2}) with u = values − mean (the jackknife of a mean),
    quantiles at Φ(z₀ + (z₀ + z)/(1 − a(z₀ + z))) for z = Φ⁻¹ of the tails of
    :func:`expanded_alpha`. BCa follows the skew of a mean of mostly-small |Δ| values and of a 0/±1
    greedy gap; the expanded tails undo the narrowness of a bootstrap at 50–100 questions.
    """
    boot = np.asarray(samples, dtype=float)
    u = np.asarray(values, dtype=float)
    u = u - u.mean()
    share = (np.sum(boot < point) + 0.5 * np.sum(boot == point)) / boot.size
    edge = 0.5 / boot.size
    z0 = _N.inv_cdf(min(max(share, edge), 1 - edge))
    ss = float(np.sum(u**2))
    a = float(np.sum(u**3)) / (6 * ss**1.5) if ss > 0 else 0.0
    tail = max(expanded_alpha(u.size, alpha) / 2, TAIL_FLOOR)  # at 2-3 questions the t's tails underflow to 0
    levels = []
    for z in (_N.inv_cdf(tail), _N.inv_cdf(1 - tail)):
        denominator = max(1 - a * (z0 + z), 1e-9)
        levels.append(_N.cdf(z0 + (z0 + z) / denominator))
    lo, hi = np.quantile(boot, levels)
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


def bootstrap_ci(statistic: Callable[[np.ndarray], np.ndarray], strata, *, n_boot: int = 1000, alpha: float = 0.05,
                 rng: np.random.Generator) -> tuple[float, float]:  # fmt: skip
    """Percentile CI of ``statistic`` under the stratified bootstrap.

    statistic: maps an index array (..., N) to values (...) (vectorised over
    leading axes; it is called once with all (n_boot, N) resampled indices).
    """
    check_bootstrap_args(n_boot, alpha, rng)
    return percentile_ci(statistic(stratified_indices(strata, n_boot, rng)), alpha)
