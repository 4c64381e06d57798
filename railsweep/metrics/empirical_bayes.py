"""What the counts say about each question's true solve probability: a prior fitted to the cell itself.

A readout gives c ~ Binomial(m, p) per question; p is never seen. The prior of p is estimated from all the
cell's questions at once (Kiefer–Wolfowitz nonparametric maximum likelihood on a grid, by EM), and each
question's posterior follows; the noise floor, the floor-corrected reading and the planner's populations read
them. Steps of :func:`fit_prior`:
  1. likelihood L[q, j] = Binomial(c_q; m_q, p_j) on the grid p_j (G points);
  2. EM on the grid weights w: posterior ∝ L·w, w ← mean posterior, ``iters`` times;
  3. posteriors of every question under the fitted w.

:func:`fit_joint_prior` does the same for pairs (p_cl, p_x) on a G×G grid, so a strategy's solve probability
keeps its tie to the clean model's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from railsweep.metrics._arrays import as_counts
from railsweep.metrics._binomial import binom_pmf

GRID = 101  # grid points of p for a single model
JOINT_GRID = 26  # grid points per axis for a (clean, strategy) pair


@dataclass(frozen=True)
class Prior:
    """Grid ``p`` (G,), weights ``w`` (G,) summing to 1, posteriors ``post`` (N, G) of the fitted questions."""

    p: np.ndarray
    w: np.ndarray
    post: np.ndarray

    def posterior_mean(self) -> np.ndarray:
        return self.post @ self.p

    def constrained_mean(self) -> np.ndarray:
        """Each question's posterior mean, spread about their average so that the values have the fitted prior's
        mean and variance (constrained Bayes: Louis 1984; Ghosh 1992), clipped to [0, 1]; single-model grids only.

        Posterior means shrink towards the prior's mean, so a population made of them is narrower than the one
        the counts came from: its sparse strata fill less often than the real ones. These values keep the
        posterior means' order and match the population's spread (``tests/test_metrics_empirical_bayes.py``).
        """
        pm = self.posterior_mean()
        mu = float(self.w @ self.p)
        var = float(self.w @ (self.p - mu) ** 2)
        spread = float(np.var(pm))
        k = np.sqrt(var / spread) if spread > 0 else 1.0
        return np.clip(mu + k * (pm - mu), 0.0, 1.0)


def _em(lik: np.ndarray, iters: int) -> tuple[np.ndarray, np.ndarray]:
    """Grid weights maximising Σ_q log Σ_j L[q, j] w_j, and the posteriors; lik (N, G)."""
    w = np.full(lik.shape[1], 1.0 / lik.shape[1])
    for _ in range(iters):
        post = lik * w
        post /= np.maximum(post.sum(axis=1, keepdims=True), 1e-300)
        w = post.mean(axis=0)
    post = lik * w
    post /= np.maximum(post.sum(axis=1, keepdims=True), 1e-300)
    return w, post


def fit_prior(c, m, grid: int = GRID, iters: int = 300) -> Prior:
    """The NPMLE prior of p from counts c (N,) out of m (N,), and each question's posterior."""
    c, m = as_counts(c, m, "prior")
    p = np.linspace(0.0, 1.0, grid)
    w, post = _em(binom_pmf(c[:, None], m[:, None], p[None, :]), iters)
    return Prior(p=p, w=w, post=post)


def fit_joint_prior(c_cl, c_x, m, grid: int = JOINT_GRID, iters: int = 300) -> Prior:
    """The NPMLE prior of (p_cl, p_x) pairs from two readouts of the same questions (same m per question).

    ``p`` is (G², 2): column 0 p_cl, column 1 p_x; ``post`` (N, G²).
    """
    c_cl, m_arr = as_counts(c_cl, m, "clean")
    c_x, _ = as_counts(c_x, m, "mitigated")
    g = np.linspace(0.0, 1.0, grid)
    pc, px = np.meshgrid(g, g, indexing="ij")
    pts = np.stack([pc.ravel(), px.ravel()], axis=1)
    lik = binom_pmf(c_cl[:, None], m_arr[:, None], pts[None, :, 0]) * binom_pmf(
        c_x[:, None], m_arr[:, None], pts[None, :, 1]
    )
    w, post = _em(lik, iters)
    return Prior(p=pts, w=w, post=post)
