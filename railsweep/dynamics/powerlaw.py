"""Fitting ``L_t = E + A t^(-alpha)`` to per-token loss curves, with bootstrap intervals over items.

Steps of :func:`fit_group` (one group of items, e.g. leaked items under M_co):
1. the group's mean curve: at each position t (from 1, the first solution token), the mean loss over
   the items whose solution reaches t, kept where at least ``min_items`` items do;
2. a bounded least-squares fit (scipy ``least_squares``, E >= 0, A >= 0, 0 <= alpha <= ``ALPHA_MAX``)
   from a few starting exponents, the best kept;
3. the same fit on ``n_boot`` resamples of the group's items (with replacement): percentile intervals.

:func:`fit_curve` fits one item's curve the same way, without intervals.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from railsweep.errors import ConfigError
from railsweep.metrics.bootstrap import percentile_ci

ALPHA_MAX = 10.0
_STARTS = (0.3, 1.0, 2.5)
PARAMS = ("E", "A", "alpha")


@dataclass(frozen=True)
class CurveFit:
    E: float
    A: float
    alpha: float
    rmse: float  # root mean squared residual of the fitted curve (unweighted)
    positions: int  # points fitted


@dataclass(frozen=True)
class GroupFit:
    fit: CurveFit
    ci: dict[str, tuple[float, float]]  # {"E": (lo, hi), "A": ..., "alpha": ...}
    n_items: int
    n_boot: int

    def columns(self) -> dict[str, float]:
        """Table columns ``E, E_lo, E_hi, A, A_lo, A_hi, alpha, alpha_lo, alpha_hi``."""
        return {
            k: v for p in PARAMS for k, v in zip((p, f"{p}_lo", f"{p}_hi"), (getattr(self.fit, p), *self.ci[p]))
        }


def fit_curve(t, loss, weights=None) -> CurveFit:
    """Least-squares (E, A, alpha) of one curve; ``weights`` (per point, e.g. item counts) scale residuals
    by their square root. NaN points are dropped; fewer than 3 points -> ConfigError."""
    from scipy.optimize import least_squares

    t = np.asarray(t, dtype=float)
    y = np.asarray(loss, dtype=float)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    ok = np.isfinite(y) & np.isfinite(t) & (t >= 1) & (w > 0)
    t, y, w = t[ok], y[ok], np.sqrt(w[ok])
    if t.size < 3:
        raise ConfigError(f"a power-law fit needs at least 3 positions, got {t.size}")

    def resid(p):
        return w * (p[0] + p[1] * np.power(t, -p[2]) - y)

    tail = float(np.min(y))
    best = None
    for a0 in _STARTS:
        x0 = [max(tail, 0.0) * 0.5, max(float(y[0]) - tail * 0.5, 1e-6), a0]
        r = least_squares(resid, x0, bounds=([0.0, 0.0, 0.0], [np.inf, np.inf, ALPHA_MAX]), method="trf")
        if best is None or r.cost < best.cost:
            best = r
    E, A, alpha = (float(v) for v in best.x)
    pred = E + A * np.power(t, -alpha)
    return CurveFit(E, A, alpha, float(np.sqrt(np.mean((pred - y) ** 2))), int(t.size))


def mean_curve(curves: Sequence[np.ndarray], min_items: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, mean loss, item count) over positions reached by >= ``min_items`` of the per-item curves (T_i,)."""
    if not curves:
        raise ConfigError("no curves to average")
    width = max(len(c) for c in curves)
    stack = np.full((len(curves), width), np.nan)
    for i, c in enumerate(curves):
        stack[i, : len(c)] = c
    n = np.sum(np.isfinite(stack), axis=0)
    keep = n >= min_items
    stack[~np.isfinite(stack)] = np.nan
    total = np.nansum(stack, axis=0)
    mean = np.divide(total, n, out=np.full(width, np.nan), where=n > 0)
    t = np.arange(1, width + 1, dtype=float)
    return t[keep], mean[keep], n[keep]


def _resampled(curves: list[np.ndarray], need: int, n_boot: int, rng: np.random.Generator):
    """The mean curve of each of ``n_boot`` resamples of the items (with replacement), one draw each."""
    for _ in range(n_boot):
        pick = rng.integers(0, len(curves), size=len(curves))
        yield mean_curve([curves[i] for i in pick], need)


def fit_group(
    curves: Sequence[np.ndarray], *, n_boot: int = 200, min_items: int = 5, alpha: float = 0.05,
    rng: np.random.Generator,
) -> GroupFit:  # fmt: skip
    """The group's fit and percentile CIs from resampling its items (see the module docstring)."""
    if n_boot < 1:
        raise ConfigError(f"n_boot must be >= 1, got {n_boot}")
    curves = [np.asarray(c, dtype=float) for c in curves]
    need = min(min_items, len(curves))
    t, y, n = mean_curve(curves, need)
    point = fit_curve(t, y, n)
    draws: dict[str, list[float]] = {p: [] for p in PARAMS}
    for bt, by, bn in _resampled(curves, need, n_boot, rng):
        try:
            f = fit_curve(bt, by, bn)
        except ConfigError:
            continue
        for p in PARAMS:
            draws[p].append(getattr(f, p))
    ci = {k: percentile_ci(v, alpha) if v else (np.nan, np.nan) for k, v in draws.items()}
    return GroupFit(point, ci, len(curves), n_boot)


def fit_log_slope(t, y, weights=None) -> tuple[float, float]:
    """(intercept b, slope s) of the weighted least-squares line ``y = b + s ln t`` (the logit-gap check
    ``Delta z_t ~ alpha ln t``)."""
    t = np.asarray(t, dtype=float)
    y = np.asarray(y, dtype=float)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    ok = np.isfinite(y) & (t >= 1) & (w > 0)
    if ok.sum() < 2:
        return np.nan, np.nan
    X = np.stack([np.ones(ok.sum()), np.log(t[ok])], axis=1) * np.sqrt(w[ok])[:, None]
    coef, *_ = np.linalg.lstsq(X, y[ok] * np.sqrt(w[ok]), rcond=None)
    return float(coef[0]), float(coef[1])


def fit_gap_slope(
    curves: Sequence[np.ndarray], *, n_boot: int = 200, min_items: int = 5, alpha: float = 0.05,
    rng: np.random.Generator,
) -> tuple[float, float, tuple[float, float]]:  # fmt: skip
    """(intercept, slope, slope CI) of the group's mean logit gap against ln t, CI over resampled items."""
    curves = [np.asarray(c, dtype=float) for c in curves]
    need = min(min_items, len(curves))
    t, y, n = mean_curve(curves, need)
    b, s = fit_log_slope(t, y, n)
    boots = [fit_log_slope(*c)[1] for c in _resampled(curves, need, n_boot, rng)]
    boots = [v for v in boots if np.isfinite(v)]
    return b, s, (percentile_ci(boots, alpha) if boots else (np.nan, np.nan))
