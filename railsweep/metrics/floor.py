"""The binomial noise floor of every metric, and a floor-corrected reading of the |Δ| metrics.

**Floor.** A mitigated model that restored M_cl exactly (p_x = p_cl on every question) still shows
|Δ(q)| = |r_x(q) − r_cl(q)| > 0: two m-sample readouts of the same p differ by E|r̂₁ − r̂₂| (0.176 at p = 0.5,
m = 10; 0.080 at m = 50). The floor of a metric is its value for that perfect restoration against the clean
cell's own readout; a figure at or below it cannot be told from a perfect restoration:

1. fit the prior of p_cl to the clean counts (:func:`railsweep.metrics.empirical_bayes.fit_prior`);
2. per question q, average over p ~ posterior(q) and c' ~ Binomial(m, p) the gap (c' − c_cl(q))/m, its
   absolute value and its two signed parts;
3. aggregate as the metric does: A-PPG (eq 5) and Δ± (eqs 8–10) as means, SA-PPG (eq 13) and S-Δ± within the
   clean cell's strata (eq 12), G-APP (eq 7) as E|mean gap| by drawing; G-AP's greedy readout is
   deterministic, so its floor is 0.

**Corrected reading.** :func:`corrected` estimates each question's noise-free gap |p_x − p_cl| as its posterior
mean under the joint prior of (p_cl, p_x) (:func:`railsweep.metrics.empirical_bayes.fit_joint_prior`); averaged
as the metric does, it is much less biased than the paper's estimator at small m (docs/metrics.md), at the
price of leaning on the fitted prior.
"""

from __future__ import annotations

import numpy as np

from railsweep.metrics._binomial import binom_pmf
from railsweep.metrics.empirical_bayes import Prior, fit_joint_prior, fit_prior

ABS_PARTS = ("a_ppg", "delta_plus", "delta_minus", "sa_ppg", "s_delta_plus", "s_delta_minus")
STRATIFIED = {"sa_ppg": "abs", "s_delta_plus": "pos", "s_delta_minus": "neg"}
MEANS = {"a_ppg": "abs", "delta_plus": "pos", "delta_minus": "neg"}


def _stratified(values: np.ndarray, strata: np.ndarray) -> float:
    _, inv = np.unique(strata, return_inverse=True)
    return float(np.mean(np.bincount(inv, weights=values) / np.bincount(inv)))


def per_question_floor(c_cl: np.ndarray, m: int, prior: Prior) -> dict[str, np.ndarray]:
    """E over a fresh readout of the same p of (c' − c)/m's |·|, max(·, 0), max(−·, 0): each (N,)."""
    k = np.arange(m + 1)
    pmf = binom_pmf(k[None, :], m, prior.p[:, None])  # (G, m+1): a fresh readout c' at each grid p
    gap = (k[None, :] - k[:, None]) / m  # [a, b]: (c' = b) − (c_cl = a)
    tables = {
        "abs": pmf @ np.abs(gap).T,  # (G, m+1): E|c' − a|/m at grid p, for each clean count a
        "pos": pmf @ np.maximum(gap, 0).T,
        "neg": pmf @ np.maximum(-gap, 0).T,
    }
    return {part: np.einsum("qg,gq->q", prior.post, t[:, c_cl]) for part, t in tables.items()}


def floors(c_cl, m: int, strata, rng: np.random.Generator, draws: int = 400) -> dict[str, float]:
    """The floor of every Table 1–4 metric for the clean counts c_cl (N,) out of one m, strata (N,)."""
    c_cl = np.asarray(c_cl, dtype=np.int64)
    prior = fit_prior(c_cl, np.full_like(c_cl, m))
    part = per_question_floor(c_cl, m, prior)
    out = {"g_ap": 0.0}
    out.update({name: float(part[p].mean()) for name, p in MEANS.items()})
    out.update({name: _stratified(part[p], strata) for name, p in STRATIFIED.items()})
    cdf = np.cumsum(prior.post, axis=1)
    u = rng.random((draws, c_cl.size))
    p = prior.p[np.minimum((cdf[None, :, :] < u[:, :, None]).sum(axis=2), prior.p.size - 1)]
    out["g_app"] = float(np.mean(np.abs((rng.binomial(m, p) - c_cl[None, :]).mean(axis=1))) / m)
    return out


def _joint_posterior(c_cl, c_x, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Posteriors (N, G²) of each question under the joint prior, and p_x − p_cl at each grid point (G²,)."""
    c_cl = np.asarray(c_cl, dtype=np.int64)
    prior = fit_joint_prior(c_cl, c_x, np.full_like(c_cl, m))
    d = prior.p[:, 1] - prior.p[:, 0]
    return prior.post, d


def corrected(c_cl, c_x, m: int, strata) -> dict[str, float]:
    """The floor-corrected A-PPG, Δ±, SA-PPG, S-Δ±: posterior means of |p_x − p_cl| and its parts."""
    post, d = _joint_posterior(c_cl, c_x, m)
    part = {"abs": post @ np.abs(d), "pos": post @ np.maximum(d, 0), "neg": post @ np.maximum(-d, 0)}
    out = {name: float(part[p].mean()) for name, p in MEANS.items()}
    out.update({name: _stratified(part[p], strata) for name, p in STRATIFIED.items()})
    return out
