"""SA-PPG's printed interval (the jackknife, each question left out once and the rest re-stratified) where
sparse strata carry the metric, the re-stratified SA-PPG, stratum occupancy and weight concentration."""

from __future__ import annotations

import numpy as np
import pytest

from railsweep.metrics import (
    Readouts,
    across_strata_indices,
    paired_difference_counts,
    percentile_ci,
    question_weights,
    sa_ppg,
    sa_ppg_restratified,
    score_counts,
    stratified_indices,
    stratify,
    weight_concentration,
)
from railsweep.metrics.aggregate import NOT_DISTINGUISHABLE
from railsweep.metrics.concentration import describe_concentration
from railsweep.metrics.selfcheck import (
    CHECK_MIN,
    calibrated_crit,
    jackknife_dof,
    jackknife_point_se,
    self_check,
    t_quantile,
)
from railsweep.metrics.simulate import Population, draw_counts, row_strata
from railsweep.metrics.stratified import stratified_mean_rows


def naive_sa_ppg(delta, strata):
    """eq 13 by hand: mean |Δ| per non-empty stratum, then the plain mean over those strata."""
    return float(np.mean([np.mean(np.abs(delta[strata == s])) for s in sorted(set(strata.tolist()))]))


def test_restratified_sa_ppg_equals_a_naive_loop_row_by_row_with_vanishing_strata():
    rng = np.random.default_rng(0)
    strata = np.array([0, 0, 0, 0, 3, 3, 7, 9, 9, 9, 9, 12])  # lopsided: strata of 1, 2 and 4 questions
    delta = rng.normal(0, 0.4, strata.size)
    idx = across_strata_indices(strata.size, 30, rng)
    got = sa_ppg_restratified(delta[idx], strata[idx], B=20)
    want = [naive_sa_ppg(delta[row], strata[row]) for row in idx]
    assert got == pytest.approx(want)
    assert len({len(set(strata[row].tolist())) for row in idx}) > 1  # some resamples lost a stratum


def test_restratified_sa_ppg_of_the_original_questions_is_sa_ppg():
    rng = np.random.default_rng(1)
    c = rng.integers(0, 11, 50)
    strata = stratify(c, np.full(50, 10), 50)
    delta = rng.uniform(-1, 1, 50)
    assert sa_ppg_restratified(delta, strata, 50)[0] == pytest.approx(float(sa_ppg(delta, strata)))


def lopsided(seed: int, n_dense: int = 300, n_sparse: int = 60, m: int = 50):
    """Most questions in the r = 0 stratum, a few spread one or two per stratum with large, erratic gaps:
    the sparse strata carry most of SA-PPG and the within-strata bootstrap cannot see their variance."""
    rng = np.random.default_rng(seed)
    c_cl = np.concatenate([np.zeros(n_dense, int), rng.integers(1, m + 1, n_sparse)])
    n = c_cl.size
    ref = rng.binomial(m, np.clip(c_cl / m + 0.1, 0, 1))
    cell = np.where(np.arange(n) < n_dense, rng.binomial(m, 0.1, n), rng.binomial(m, rng.uniform(0, 1, n)))
    return c_cl, cell, ref, m


def test_jackknife_interval_is_wider_than_the_within_strata_bootstrap_where_one_question_strata_carry_it():
    """The within-strata bootstrap redraws a one-question stratum as itself and never sees its variance;
    the jackknife deletes it, so the printed interval is several times wider."""
    c_cl, cell, _, m = lopsided(0)
    ms = np.full(c_cl.size, m)
    s = score_counts(Readouts.of(c_cl, ms, 0 * ms), Readouts.of(cell, ms, 0 * ms), n_boot=200,
                     rng=np.random.default_rng(0))  # fmt: skip
    assert s["sa_ppg"]["interval"] == "jackknife" and s["sa_ppg"]["check"] >= CHECK_MIN
    jack = s["sa_ppg"]["ci_high"] - s["sa_ppg"]["ci_low"]
    strata = stratify(c_cl, ms, 50)
    idx = stratified_indices(strata, 400, np.random.default_rng(0))
    lo, hi = percentile_ci(sa_ppg((cell / m - c_cl / m)[idx], strata))
    assert jack > 2 * (hi - lo)
    assert s["sappg_concentrated"] and s["sappg_sparse_share"] <= 0.10 and s["sappg_sparse_weight"] >= 0.5


def test_printed_stratified_intervals_are_the_jackknife_se_times_the_calibrated_critical_value():
    c_cl, cell, _, m = lopsided(2, n_dense=80, n_sparse=30)
    ms = np.full(c_cl.size, m)
    s = score_counts(Readouts.of(c_cl, ms, 0 * ms), Readouts.of(cell, ms, 0 * ms), B=50, n_boot=100,
                     rng=np.random.default_rng(5))  # fmt: skip
    strata = stratify(c_cl, ms, 50)
    delta = cell / m - c_cl / m
    for part in ("sa_ppg", "s_delta_plus", "s_delta_minus"):
        point, se, dof = jackknife_point_se(delta, None, strata, part)
        assert s[part]["interval"] == "jackknife" and s[part]["value"] == pytest.approx(point), part
        lo, hi = s[part]["ci_low"], s[part]["ci_high"]
        assert (lo + hi) / 2 == pytest.approx(point), part
        crit = (hi - lo) / 2 / se  # calibrated on the cell's fitted population: near, not at, the t quantile
        assert 0.5 * t_quantile(dof, 0.05) < crit < 2 * t_quantile(dof, 0.05), part
    filled = np.unique(strata).size  # the plain t quantile's degrees of freedom: twice the filled strata less one
    assert jackknife_dof(strata) == 2 * (filled - 1) < delta.size - 1


def test_calibrated_critical_value_is_the_order_statistic_of_the_studentized_errors():
    t = np.arange(1, 20, dtype=float)  # 19 errors: the ⌈20 × 0.95⌉ = 19th smallest
    assert calibrated_crit(t, 0.05) == 19.0
    assert calibrated_crit(t, 0.10) == 18.0
    assert calibrated_crit(np.r_[t[:-1], np.nan], 0.05) == np.inf  # a cell without an se never covers
    assert calibrated_crit(t[:10], 0.05) == np.inf  # too few cells for a 95 % quantile


def test_calibrated_interval_covers_at_its_rate_where_the_t_interval_is_too_wide():
    """Uniform M_cl, 100 questions, m = 50, B = 50: the jackknife t covers 0.975; the calibrated value, from
    the check's own simulation, brings an independent simulation of the same population back to 0.95."""
    rng = np.random.default_rng(11)
    n, m, B = 100, 50, 50
    p_cl = rng.beta(1, 1, 5000)
    p_co = np.where(rng.random(5000) < 0.5, p_cl + 0.5 * (1 - p_cl), p_cl)
    pop = Population(("clean", "co"), np.stack([p_cl, p_co]), np.stack([p_cl, p_co]) > 0.5)
    crit = self_check(pop, n, m, B, 0.05, rng, reps=400, design_reps=2000)["sa_ppg"].crit
    c, _ = draw_counts(pop, n, m, 4000, rng)
    target = stratified_mean_rows(np.abs(c[:, 1] - c[:, 0]) / m, row_strata(c[:, 0], m, B), B).mean()
    hits_t = hits_c = 0
    for r in range(600):
        point, se, dof = jackknife_point_se((c[r, 1] - c[r, 0]) / m, None, row_strata(c[r, 0], m, B), "sa_ppg")
        hits_t += abs(point - target) <= t_quantile(dof, 0.05) * se
        hits_c += abs(point - target) <= crit * se
    assert crit < t_quantile(2 * (B - 1), 0.05) and hits_t / 600 > 0.97  # the plain t is conservative here
    assert 0.93 <= hits_c / 600 <= 0.97


def test_paired_difference_of_identical_cells_is_zero_and_not_distinguishable():
    c_cl, cell, _, m = lopsided(3, n_dense=50, n_sparse=20)
    ms = np.full(c_cl.size, m)
    cl, co = Readouts.of(c_cl, ms, 0 * ms), Readouts.of(cell, ms, 0 * ms)
    d = paired_difference_counts(cl, co, co, "sa_ppg", n_boot=100, rng=np.random.default_rng(0))
    assert (d["difference"], d["ci_low"], d["ci_high"]) == (0.0, 0.0, 0.0)
    assert d["interval"] == "jackknife" and d["verdict"] == NOT_DISTINGUISHABLE


def test_weight_concentration_counts_the_sparsest_strata_up_to_half_the_weight():
    strata = np.array([0] * 50 + [5] + [9] + [12] * 3)  # 4 strata: 50, 1, 1, 3 questions
    conc = weight_concentration(strata, B=20)
    assert conc == {"sparse_questions": 2, "sparse_share": 2 / 55, "sparse_weight": 0.5, "sparse_strata": 2,
                    "filled_strata": 4, "concentrated": True}  # fmt: skip
    w = question_weights(strata)
    assert w.sum() == pytest.approx(1.0) and w[50] == pytest.approx(0.25)
    assert "WARNING" in describe_concentration(conc)


def test_an_even_spread_is_not_flagged():
    conc = weight_concentration(np.repeat(np.arange(10), 8), B=10)
    assert conc["sparse_share"] == pytest.approx(0.5) and not conc["concentrated"]
    assert "WARNING" not in describe_concentration(conc)
