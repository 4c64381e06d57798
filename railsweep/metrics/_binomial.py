"""Binomial probabilities and Student-t quantiles in numpy and the standard library (the metrics import numpy only)."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np


def binom_pmf(k, m, p) -> np.ndarray:
    """P(X = k) for X ~ Binomial(m, p), broadcast over k, m (ints) and p (floats in [0, 1])."""
    k, m, p = np.broadcast_arrays(np.asarray(k, np.int64), np.asarray(m, np.int64), np.asarray(p, float))
    top = int(m.max()) if m.size else 0
    logfact = np.concatenate([[0.0], np.cumsum(np.log(np.arange(1, top + 1, dtype=float)))])
    valid = (k >= 0) & (k <= m)
    kk, mm = np.where(valid, k, 0), np.where(valid, m, 0)
    log_c = logfact[mm] - logfact[kk] - logfact[mm - kk]
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = np.where(kk > 0, kk * np.log(p), 0.0) + np.where(mm - kk > 0, (mm - kk) * np.log1p(-p), 0.0)
    return np.where(valid, np.exp(log_c + log_p), 0.0)


def t_quantile(q: float, dof: int) -> float:
    """Quantile q of Student's t with ``dof`` degrees of freedom (Cornish–Fisher expansion in 1/dof around
    the normal quantile; within 0.002 of the exact value at q = 0.975 from 5 degrees of freedom on)."""
    z = NormalDist().inv_cdf(q)
    v = float(max(dof, 1))
    return (
        z
        + (z**3 + z) / (4 * v)
        + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * v**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * v**3)
        + (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / (92160 * v**4)
    )


__all__ = ["binom_pmf", "t_quantile"]
