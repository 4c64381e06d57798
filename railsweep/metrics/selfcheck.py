"""Does a stratified interval hold at this cell's size? A simulation from the cell's own fitted population.

The jackknife interval of SA-PPG and S-Δ± (:mod:`railsweep.metrics.jackknife`) covers at its stated rate where
the clean model's strata are stable; where a sparse stratum is filled in some draws of the questions and empty
in others, the estimator jumps between two values and no symmetric interval around one draw covers its average.
Each cell is therefore checked on a population that looks like it:

1. the population: the cell's questions, each model's p its constrained-Bayes posterior mean under that model's
   fitted prior (:mod:`railsweep.metrics.empirical_bayes`: posterior means alone are narrower than the
   population, so its sparse strata would fill less often than the real ones), greedy verdicts as observed;
2. the design value of each stratified metric at the cell's (n, m, B): the mean over ``design_reps`` cells;
3. ``reps`` simulated cells, each with its studentized error T = (θ̂ − θ)/se (jackknife se); the **check** is
   the share with |T| within the t quantile (the plain t-interval's coverage), the **calibrated critical
   value** the (1 − α) quantile of |T| (a parametric bootstrap-t: Efron & Tibshirani 1993, ch. 12).

An interval is printed, as θ̂ ± calibrated value × se, when the check is at least :data:`CHECK_MIN` and, where
the strata are read sharply (m ≥ 2B), every stratum holds at least :data:`SHARP_MIN` questions
(:func:`sharp_stratum_min`); what that covers is in docs/metrics.md ("Coverage, measured").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from railsweep.metrics._binomial import t_quantile as _t
from railsweep.metrics.empirical_bayes import fit_prior
from railsweep.metrics.jackknife import jackknife_se, leave_one_out
from railsweep.metrics.simulate import Population, draw_counts, row_strata
from railsweep.metrics.stratified import stratified_mean_rows

CHECK_MIN = 0.92  # the lowest simulated coverage at which a 95 % interval is printed
SHARP_MIN = 5  # questions every stratum needs for a printed interval when m ≥ 2B
PARTS = {
    "sa_ppg": np.abs,
    "s_delta_plus": lambda d: np.maximum(d, 0.0),
    "s_delta_minus": lambda d: np.maximum(-d, 0.0),
}


class Check(NamedTuple):
    """One stratified metric's self-check at a design."""

    coverage: float  # the plain jackknife t-interval's simulated coverage (printed when ≥ CHECK_MIN)
    crit: float  # the calibrated critical value
    half_width: float  # mean printed half-width, crit × se, over the simulated cells


def fitted_population(c: np.ndarray, m: int, greedy: np.ndarray) -> Population:
    """Population of the cell's questions: c int (K, N) counts of K models (row 0 clean), one m; each model's p
    its constrained-Bayes posterior mean (:meth:`~railsweep.metrics.empirical_bayes.Prior.constrained_mean`)."""
    p = np.stack(
        [fit_prior(row, np.full_like(row, m)).constrained_mean() for row in np.asarray(c, dtype=np.int64)]
    )
    return Population(tuple(f"model{k}" for k in range(p.shape[0])), p, np.asarray(greedy, dtype=float))


def sharp_stratum_min(strata: np.ndarray, m: int | None, B: int) -> int | None:
    """The fewest clean questions in any of the B strata when m ≥ 2B, else None.

    At m ≥ 2B every stratum spans two or more counts, so a question's stratum is read almost without binomial
    noise and whether a sparse stratum is filled depends on which questions were drawn. A cell in which such a
    stratum is empty or holds a few questions looks stable to the jackknife and to a simulation from its own
    fitted population, while the design value averages over draws that fill it: there the check passed the
    cells whose interval missed (0.87-0.90 coverage, docs/metrics.md, "Where the check cannot see the design").
    The interval is printed only when every stratum holds at least :data:`SHARP_MIN` questions.
    """
    if m is None or m < 2 * B:
        return None
    return int(np.bincount(np.asarray(strata, dtype=np.int64), minlength=B)[:B].min())


def too_thin(sharp_min: float | None) -> bool:
    """True where a :func:`sharp_stratum_min` reading withholds the stratified intervals."""
    return sharp_min is not None and sharp_min < SHARP_MIN


def sharp_sparse(strata: np.ndarray, m: int | None, B: int) -> bool:
    """True where the clean strata at (m, B) withhold the stratified intervals."""
    return too_thin(sharp_stratum_min(strata, m, B))


def t_quantile(dof: int, alpha: float) -> float:
    return _t(1 - alpha / 2, max(dof, 1))


def jackknife_dof(strata: np.ndarray) -> int:
    """Degrees of freedom of a stratified metric's jackknife t: twice its filled strata less one (at most N − 1).

    The metric averages K stratum means, so its variance estimate rests on fewer pieces than N questions.
    Chosen by the coverage simulation of docs/metrics.md ("Coverage, measured"): N − 1 covered 0.87–0.90 on
    cells with 10 strata, K − 1 went above 0.97 on a third of the grid, 2(K − 1) lies between.
    """
    return min(2 * (int(np.unique(strata).size) - 1), int(strata.size) - 1)


def jackknife_interval(
    d_a, d_b, strata, part: str, alpha: float, crit: float | None = None
) -> tuple[float, float, float]:
    """Point, lower and upper bound of metric(a) − metric(b) by the jackknife t (``d_b`` None: metric(a)).

    d_a, d_b: float (N,) per-question gaps r_x − r_cl; strata: int (N,) of the clean model;
    ``crit``: the critical value (a calibrated one from :func:`self_check`), else the t quantile at
    :func:`jackknife_dof`.
    """
    point, se, dof = jackknife_point_se(d_a, d_b, strata, part)
    half = (t_quantile(dof, alpha) if crit is None else crit) * se
    return point, point - half, point + half


def jackknife_point_se(d_a, d_b, strata, part: str) -> tuple[float, float, int]:
    """Point, jackknife se and t degrees of freedom of metric(a) − metric(b) (``d_b`` None: metric(a))."""
    s = np.asarray(strata, dtype=np.int64)
    f = PARTS[part]
    values = f(np.asarray(d_a, dtype=float))
    if d_b is not None:
        values_b = f(np.asarray(d_b, dtype=float))
    loo = leave_one_out(values, s)
    point = float(stratified_mean_rows(values[None], s[None], int(s.max()) + 1)[0])
    if d_b is not None:
        loo = loo - leave_one_out(values_b, s)
        point -= float(stratified_mean_rows(values_b[None], s[None], int(s.max()) + 1)[0])
    return point, jackknife_se(loo), jackknife_dof(s)


def calibrated_crit(t_abs: np.ndarray, alpha: float) -> float:
    """The ⌈(R + 1)(1 − α)⌉-th smallest of R studentized errors |T| (inf when that exceeds R)."""
    t = np.sort(np.where(np.isfinite(t_abs), t_abs, np.inf))
    k = int(np.ceil((t.size + 1) * (1 - alpha)))
    return float(t[k - 1]) if k <= t.size else float("inf")


def self_check(
    pop: Population,
    n: int,
    m: int,
    B: int,
    alpha: float,
    rng: np.random.Generator,
    pair: bool = False,
    reps: int = 400,
    design_reps: int = 2000,
) -> dict[str, Check]:
    """Per stratified metric: the t-interval's simulated coverage of the design value, the calibrated critical value
    and the mean half-width it prints.

    ``pair``: the interval of model 1 − model 2 (a paired difference), else of model 1.
    """
    c, _ = draw_counts(pop, n, m, design_reps, rng)
    s = row_strata(c[:, 0], m, B)
    target = {}
    for part, f in PARTS.items():
        v = stratified_mean_rows(f((c[:, 1] - c[:, 0]) / m), s, B)
        if pair:
            v = v - stratified_mean_rows(f((c[:, 2] - c[:, 0]) / m), s, B)
        target[part] = float(v.mean())
    c, _ = draw_counts(pop, n, m, reps, rng)
    s_r = row_strata(c[:, 0], m, B)
    t_abs, t_q, se_r = ({part: np.empty(reps) for part in PARTS} for _ in range(3))
    for r in range(reps):
        d_b = (c[r, 2] - c[r, 0]) / m if pair else None
        for part in PARTS:
            point, se, dof = jackknife_point_se((c[r, 1] - c[r, 0]) / m, d_b, s_r[r], part)
            with np.errstate(divide="ignore", invalid="ignore"):
                t_abs[part][r] = np.float64(abs(point - target[part])) / se  # se 0: inf, or NaN at 0/0
            t_q[part][r], se_r[part][r] = t_quantile(dof, alpha), se
    out = {}
    for part in PARTS:
        crit = calibrated_crit(t_abs[part], alpha)
        se = se_r[part][np.isfinite(se_r[part])]
        width = float("inf") if np.isinf(crit) else float(crit * se.mean()) if se.size else float("nan")
        out[part] = Check(float(np.mean(t_abs[part] <= t_q[part])), crit, width)
    return out

