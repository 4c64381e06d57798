"""Leave-one-question-out (jackknife) standard errors of the stratified metrics (SA-PPG, S-Δ±; eq 13).

A stratified metric averages per-stratum means with weight 1/|ℬ| per filled stratum. Its bootstrap standard
error is too small where strata are sparse (a one-question stratum is redrawn as itself or vanishes): on
simulated cells the bootstrap sd was 0.7–0.8 of the true one (docs/metrics.md). The jackknife deletes each
question once and re-stratifies, so deleting the only question of a stratum removes it and the variance of
sparse strata enters in full. Closed form, O(N), no random numbers:

1. per stratum b: sum S_b, count n_b, mean ȳ_b; θ = mean of ȳ_b over the K filled strata;
2. deleting question q of stratum b: if n_b > 1, ȳ_b becomes (S_b − y_q)/(n_b − 1) and θ_(q) = θ + (ȳ_b' − ȳ_b)/K;
   if n_b = 1 the stratum leaves and θ_(q) = (K·θ − ȳ_b)/(K − 1);
3. se² = (N − 1)/N · Σ_q (θ_(q) − mean θ_(·))².
"""

from __future__ import annotations

import numpy as np


def leave_one_out(values, strata) -> np.ndarray:
    """θ_(q) of the stratified mean of ``values`` with question q deleted, float (N,).

    values: float (N,) per-question values (|Δ|, max(Δ, 0), ...); strata: int (N,).
    A cell whose only stratum has one question has no leave-one-out value (NaN).
    """
    y = np.asarray(values, dtype=float)
    s = np.asarray(strata, dtype=np.int64)
    _, inv = np.unique(s, return_inverse=True)
    n_b = np.bincount(inv).astype(float)
    S_b = np.bincount(inv, weights=y)
    mean_b = S_b / n_b
    K = mean_b.size
    theta = mean_b.mean()
    nb_q, Sb_q, mb_q = n_b[inv], S_b[inv], mean_b[inv]
    with np.errstate(invalid="ignore", divide="ignore"):
        kept = theta + ((Sb_q - y) / (nb_q - 1) - mb_q) / K
        gone = (K * theta - mb_q) / (K - 1) if K > 1 else np.full_like(y, np.nan)
    return np.where(nb_q > 1, kept, gone)


def jackknife_se(pseudo: np.ndarray) -> float:
    """se from leave-one-out values θ_(q) (N,): √((N − 1)/N · Σ (θ_(q) − mean)²); NaN when N < 2."""
    t = np.asarray(pseudo, dtype=float)
    if t.size < 2 or not np.all(np.isfinite(t)):
        return float("nan")
    return float(np.sqrt((t.size - 1) / t.size * np.sum((t - t.mean()) ** 2)))
