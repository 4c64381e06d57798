"""The planner: the smallest difference between two strategies a design can detect, and the design a difference needs.

A paired comparison of strategies a and b detects a difference δ with power 1 − β at level α when
|δ| ≥ (z_{1−α/2} + z_{1−β})·SE, SE the standard error of metric(a) − metric(b) at the design (n, m, B):

1. the pilot population (:class:`~railsweep.metrics.simulate.Population`): rows clean, a, b, each question's p
   the posterior mean of its count (:mod:`railsweep.metrics.empirical_bayes`); from cells of an earlier run
   (:func:`pilot_from_cells`), or from an M_cl readout alone (:func:`pilot_from_clean`: a and b two decoders of
   M_cl's ability with independent greedy draws, so the figure is a noise-only lower bound);
2. ``reps`` cells simulated at the design; SE = the sd of metric(a) − metric(b) over them;
3. MDE = (z_{1−α/2} + z_{1−β})·SE; for SA-PPG, MDE = h + z_{1−β}·SE with h the mean half-width its calibrated
   jackknife interval prints at the design (wider than z·SE where sparse strata make the jackknife under-cover);
4. for a target MDE, the questions it needs at each m from MDE ∝ 1/√n at ``n0`` questions.

A design where a stratified interval would be withheld (:mod:`railsweep.metrics.selfcheck`: the check below
:data:`~railsweep.metrics.selfcheck.CHECK_MIN`, or, at m ≥ 2B, a stratum with fewer than
:data:`~railsweep.metrics.selfcheck.SHARP_MIN` questions in most simulated cells) is flagged "too small".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from railsweep.errors import ConfigError
from railsweep.metrics.empirical_bayes import fit_prior
from railsweep.metrics.selfcheck import CHECK_MIN, SHARP_MIN, self_check, sharp_sparse
from railsweep.metrics.simulate import Population, check_design, draw_counts, metric_rows, row_strata

PLANNED = ("sa_ppg", "a_ppg", "g_ap")  # the metrics the planner reports
COPIES = 20  # atoms per pilot question in a clean-only pilot (independent greedy draws)


def z_sum(alpha: float = 0.05, power: float = 0.8) -> float:
    """z_{1−α/2} + z_{power}: 2.80 at α = 0.05, power 0.8."""
    nd = NormalDist()
    return nd.inv_cdf(1 - alpha / 2) + nd.inv_cdf(power)


def predicted_power(delta: float, se: float, alpha: float = 0.05) -> float:
    """Power of the two-sided level-α test of a true difference ``delta`` with standard error ``se``."""
    nd, z = NormalDist(), NormalDist().inv_cdf(1 - alpha / 2)
    r = abs(delta) / se if se > 0 else math.inf
    return nd.cdf(r - z) + nd.cdf(-r - z)


def _posterior_means(c: np.ndarray, m: int) -> np.ndarray:
    return fit_prior(c, np.full_like(c, m)).posterior_mean()


def pilot_from_clean(c_cl, m: int, rng: np.random.Generator) -> Population:
    """Clean-only pilot: a and b solve each question with M_cl's probability; greedy verdicts ~ Bernoulli(p)."""
    p = np.repeat(_posterior_means(np.asarray(c_cl, dtype=np.int64), m), COPIES)
    greedy = (rng.random((3, p.size)) < p).astype(float)
    return Population(("clean", "a", "b"), np.stack([p, p, p]), greedy)


def pilot_from_cells(c_cl, c_a, c_b, m: int, r01) -> Population:
    """Pilot from three cells of the same questions: counts (N,) of M_cl, a, b and their greedy r01 (3, N)."""
    p = np.stack([_posterior_means(np.asarray(c, dtype=np.int64), m) for c in (c_cl, c_a, c_b)])
    return Population(("clean", "a", "b"), p, np.asarray(r01, dtype=float))


def difference_se(
    pop: Population, n: int, m: int, B: int, rng: np.random.Generator, reps: int = 400
) -> dict[str, float]:
    """SE of metric(a) − metric(b) at the design, per planned metric, over ``reps`` simulated cells."""
    n, m, B = check_design(n, m, B)
    c, g = draw_counts(pop, n, m, reps, rng)
    a = metric_rows(c[:, 0], c[:, 1], g[:, 0], g[:, 1], m, B)
    b = metric_rows(c[:, 0], c[:, 2], g[:, 0], g[:, 2], m, B)
    return {k: float(np.std(a[k] - b[k], ddof=1)) for k in PLANNED}


@dataclass(frozen=True)
class Plan:
    """MDE per metric at one design, and whether the stratified interval would be printed there."""

    n: int
    m: int
    B: int
    mde: dict[str, float]
    check: float  # simulated coverage of SA-PPG's paired jackknife interval
    alpha: float
    power: float
    filled: float = 1.0  # share of simulated cells with every stratum filled enough at m ≥ 2B (1 at m < 2B)

    @property
    def too_small(self) -> bool:
        return not self.check >= CHECK_MIN or self.filled < 0.5

    def interval_note(self) -> str:
        """Whether SA-PPG's paired interval would be printed at this design, and the simulated figure why."""
        if not self.check >= CHECK_MIN:
            return f"withheld: too small (simulated coverage {self.check:.2f})"
        if self.filled < 0.5:
            return (f"withheld: sparse strata at m >= 2B (every stratum holds {SHARP_MIN}+ questions in "
                    f"{self.filled:.0%} of simulated cells)")
        return f"printed (simulated coverage {self.check:.2f})"


def plan(
    pop: Population, n: int, m: int, B: int, rng: np.random.Generator, alpha: float = 0.05, power: float = 0.8
) -> Plan:
    """The minimum detectable difference of each planned metric at (n, m, B)."""
    if not 0 < alpha < 1 or not 0 < power < 1:
        raise ConfigError(f"alpha and power must lie in (0, 1), got alpha={alpha!r}, power={power!r}")
    mde, check = _mde(pop, n, m, B, rng, alpha, power)
    return Plan(n, m, B, mde, check, alpha, power, filled_share(pop, n, m, B, rng))


def filled_share(pop: Population, n: int, m: int, B: int, rng: np.random.Generator, reps: int = 200) -> float:
    """Share of cells simulated at the design whose stratified intervals :func:`sharp_sparse` lets through."""
    if m < 2 * B:
        return 1.0
    c, _ = draw_counts(pop, n, m, reps, rng)
    s = row_strata(c[:, 0], m, B)
    return float(np.mean([not sharp_sparse(row, m, B) for row in s]))


def _mde(pop, n, m, B, rng, alpha, power) -> tuple[dict[str, float], float]:
    """Each planned metric's MDE at (n, m, B) (step 3) and SA-PPG's simulated interval check."""
    se = difference_se(pop, n, m, B, rng)
    mde = {k: z_sum(alpha, power) * v for k, v in se.items()}
    check = self_check(pop, n, m, B, alpha, rng, pair=True, reps=200, design_reps=1000)["sa_ppg"]
    if np.isfinite(check.half_width):
        mde["sa_ppg"] = check.half_width + NormalDist().inv_cdf(power) * se["sa_ppg"]
    return mde, check.coverage


def questions_needed(pop: Population, target: float, m: int, B: int, rng: np.random.Generator, n0: int = 200,
                     alpha: float = 0.05, power: float = 0.8) -> dict[str, int]:  # fmt: skip
    """Questions needed at m for an MDE of ``target`` per planned metric (MDE ∝ 1/√n from a run at n0)."""
    if not target > 0:
        raise ConfigError(f"--mde must be positive, got {target!r}")
    mde, _ = _mde(pop, n0, m, B, rng, alpha, power)
    return {k: max(2, math.ceil(n0 * (v / target) ** 2)) for k, v in mde.items()}


def format_plan(plans: list[Plan], source: str) -> str:
    """The planner's lines: one per design with each metric's MDE and the interval check."""
    lines = [
        f"power (pilot: {source}): smallest difference between two strategies detectable at "
        f"{plans[0].power:.0%} power, α = {plans[0].alpha:g}",
        f"{'n':>6} {'m':>4} {'B':>4} "
        + " ".join(f"{k:>10}" for k in ("SA-PPG", "A-PPG", "G-AP"))
        + "  SA-PPG interval",
    ]
    for p in plans:
        lines.append(
            f"{p.n:>6} {p.m:>4} {p.B:>4} " + " ".join(f"{p.mde[k]:>10.3f}" for k in PLANNED)
            + f"  {p.interval_note()}"
        )  # fmt: skip
    return "\n".join(lines)
