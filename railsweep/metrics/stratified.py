"""Stratified aggregation by the clean model's solve probability: strata (eq 12), SA-PPG (eq 13), S-Δ±.

Strata are exact for ``r = c/m``: stratum index ``(c·B) // m`` in integer
arithmetic (Python integers where ``c·B`` would overflow int64, so any B up to
2**63 − 1 is exact), clipped to B−1, so a question on an edge ``c/m = b/B`` goes to the
upper stratum and r = 1 lands in the last (closed) stratum. Empty strata are
excluded from the average (the set ℬ of eq 13), never counted as zero.
"""

from __future__ import annotations

import numpy as np

from railsweep.metrics._arrays import as_counts, check_bins


def stratify(c_cl, m_cl, B: int = 50) -> np.ndarray:
    """Stratum index b−1 ∈ [0, B) of each question (paper eq 12): ``r_cl ∈ [(b−1)/B, b/B)``.

    c_cl, m_cl: int (N,) counts of the clean model (m = 0 reads as r = 0).
    Returns int64 (N,).
    """
    B = check_bins(B)
    c, m = as_counts(c_cl, m_cl, "clean")
    m1 = np.maximum(m, 1)
    if c.size and int(c.max()) * B > np.iinfo(np.int64).max:  # c·B overflows int64: exact integers
        idx = np.array([int(ci) * B // int(mi) for ci, mi in zip(c, m1)], dtype=np.int64)
    else:
        idx = np.floor_divide(c * B, m1)
    return np.minimum(idx, B - 1)


def _stratum_means(x: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Per non-empty stratum mean of x along the question axis: (..., N) -> (..., K)."""
    strata = np.asarray(strata)
    if strata.ndim != 1 or strata.shape[0] != x.shape[-1]:
        raise ValueError(f"strata must be (N,) with N = {x.shape[-1]}, got shape {strata.shape}")
    _, inv = np.unique(strata, return_inverse=True)
    onehot = np.zeros((strata.shape[0], int(inv.max()) + 1 if inv.size else 0))
    onehot[np.arange(strata.shape[0]), inv] = 1.0
    return (x @ onehot) / onehot.sum(axis=0)


def sa_ppg(delta, strata) -> np.ndarray:
    """SA-PPG (paper eq 13): ``(1/|ℬ|) Σ_{b∈ℬ} mean_{q∈D_b} |Δ(q)|`` over non-empty strata ℬ.

    delta: float (..., N) per-question gaps (eq 4); strata: int (N,) from
    :func:`stratify` on the clean model. Returns (...).
    """
    return _stratum_means(np.abs(np.asarray(delta, dtype=float)), strata).mean(axis=-1)


def stratified_mean_rows(values, strata, B: int = 50) -> np.ndarray:
    """Equal-weight mean over each row's non-empty strata of the per-stratum mean of ``values``: (R, N) -> (R,).

    values: float (R, N); strata: int (R, N), each row stratified on its own (ℬ is that row's non-empty
    strata). One ``bincount`` over (row, stratum) keys, no row loop.
    """
    B = check_bins(B)
    v = np.atleast_2d(np.asarray(values, dtype=float))
    s = np.atleast_2d(np.asarray(strata, dtype=np.int64))
    if v.shape != s.shape:
        raise ValueError(f"values {v.shape} and strata {s.shape} must have the same shape")
    R = v.shape[0]
    key = (np.arange(R)[:, None] * B + s).ravel()
    sums = np.bincount(key, weights=v.ravel(), minlength=R * B).reshape(R, B)
    cnt = np.bincount(key, minlength=R * B).reshape(R, B)
    means = np.divide(sums, cnt, out=np.zeros_like(sums), where=cnt > 0)
    return means.sum(axis=1) / np.count_nonzero(cnt, axis=1)


def sa_ppg_restratified(delta, strata, B: int = 50) -> np.ndarray:
    """SA-PPG (eq 13) of resamples whose strata differ row by row: (R, N) -> (R,).

    delta: float (R, N) gaps of the resampled questions; strata: int (R, N) their clean strata (eq 12),
    e.g. ``strata[idx]`` for an across-strata resample ``idx``; each row is re-stratified on its own.
    """
    return stratified_mean_rows(np.abs(np.asarray(delta, dtype=float)), strata, B)


def s_delta_plus(delta, strata) -> np.ndarray:
    """S-Δ+ (Table 4): max(Δ, 0) averaged within strata, then across non-empty strata; (..., N) -> (...)."""
    return _stratum_means(np.maximum(np.asarray(delta, dtype=float), 0.0), strata).mean(axis=-1)


def s_delta_minus(delta, strata) -> np.ndarray:
    """S-Δ− (Table 4): max(−Δ, 0) averaged like SA-PPG; S-Δ+ + S-Δ− = SA-PPG. (..., N) -> (...)."""
    return _stratum_means(np.maximum(-np.asarray(delta, dtype=float), 0.0), strata).mean(axis=-1)


def stratum_table(delta, strata, B: int = 50) -> dict[str, np.ndarray]:
    """Per-stratum breakdown for plots: arrays of length B (NaN where the stratum is empty).

    Keys: ``lower`` (b−1)/B, ``n`` questions, ``mean_abs`` |Δ|, ``mean_pos``
    max(Δ,0), ``mean_neg`` max(−Δ,0), ``mean`` signed Δ.
    """
    B = check_bins(B)
    d = np.asarray(delta, dtype=float)
    s = np.asarray(strata)
    n = np.bincount(s, minlength=B).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):

        def per(x: np.ndarray) -> np.ndarray:
            return np.where(n > 0, np.bincount(s, weights=x, minlength=B) / n, np.nan)

        return {
            "lower": np.arange(B) / B,
            "n": n,
            "mean_abs": per(np.abs(d)),
            "mean_pos": per(np.maximum(d, 0.0)),
            "mean_neg": per(np.maximum(-d, 0.0)),
            "mean": per(d),
        }
