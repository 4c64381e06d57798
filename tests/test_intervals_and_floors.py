"""The jackknife of the stratified metrics, the noise floor, verdicts on paired differences, and when a
stratified interval is printed or withheld (railsweep.metrics.jackknife, .floor, .aggregate)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from railsweep.analysis.uncertainty import estimate_note
from railsweep.metrics import Readouts, paired_difference_counts, score_counts, stratify
from railsweep.metrics import aggregate as agg
from railsweep.metrics.aggregate import (
    MEAN_METRICS,
    NO_INTERVAL,
    NO_INTERVAL_UNEQUAL_M,
    NOT_DISTINGUISHABLE,
    STRATIFIED_METRICS,
    verdict,
)
from railsweep.metrics.floor import floors
from railsweep.metrics.jackknife import jackknife_se, leave_one_out
from railsweep.metrics.selfcheck import CHECK_MIN, Check, jackknife_interval


def naive_stratified_mean(values: np.ndarray, strata: np.ndarray) -> float:
    """eq 13 by hand: the mean of each non-empty stratum, then the plain mean over those strata."""
    return float(np.mean([values[strata == s].mean() for s in np.unique(strata)]))


# ------------------------------------------------------------------ 1. the jackknife's leave-one-out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_leave_one_out_equals_the_stratified_mean_recomputed_without_each_question(seed):
    rng = np.random.default_rng(seed)
    # lopsided: strata of 6, 2 and 4 questions and three of one question (7, 12, 20), not numbered 0..K-1
    strata = rng.permutation(np.array([0] * 6 + [3] * 2 + [7] + [9] * 4 + [12] + [20]))
    values = np.abs(rng.normal(0, 0.4, strata.size))
    got = leave_one_out(values, strata)
    want = [naive_stratified_mean(np.delete(values, q), np.delete(strata, q)) for q in range(strata.size)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # deleting a one-question stratum drops it (|ℬ| falls by one) rather than leaving an empty mean
    lone = np.flatnonzero(strata == 7)[0]
    rest = strata != 7
    assert got[lone] == pytest.approx(naive_stratified_mean(values[rest], strata[rest]))
    n = strata.size
    se = np.sqrt((n - 1) / n * np.sum((np.array(want) - np.mean(want)) ** 2))
    assert jackknife_se(got) == pytest.approx(se)


def test_leave_one_out_on_many_sparse_strata_of_real_clean_counts():
    rng = np.random.default_rng(3)
    c = np.concatenate(
        [np.zeros(40, int), rng.integers(1, 51, 25)]
    )  # most at 0, the rest one or two a stratum
    strata = stratify(c, np.full(c.size, 50), 50)
    values = rng.uniform(0, 1, c.size)
    assert np.bincount(strata).tolist().count(1) >= 5  # several one-question strata
    want = [naive_stratified_mean(np.delete(values, q), np.delete(strata, q)) for q in range(c.size)]
    np.testing.assert_allclose(leave_one_out(values, strata), want, rtol=0, atol=1e-12)


def test_a_lone_question_has_no_leave_one_out_and_no_standard_error():
    assert np.isnan(leave_one_out(np.array([0.3]), np.array([4]))).all()
    assert np.isnan(jackknife_se(np.array([0.3])))
    assert leave_one_out(np.array([0.2, 0.6]), np.array([4, 4])).tolist() == pytest.approx([0.6, 0.2])


# ------------------------------------------------------------------ 2. the noise floor


def exact_mean_abs_difference(m: int, p: float) -> float:
    """E|X1 − X2|/m for X1, X2 ~ Binomial(m, p) independent."""
    pmf = [math.comb(m, k) * p**k * (1 - p) ** (m - k) for k in range(m + 1)]
    return sum(pmf[a] * pmf[b] * abs(a - b) for a in range(m + 1) for b in range(m + 1)) / m


def test_floor_of_a_ppg_at_p_one_half_is_the_mean_gap_of_two_readouts_and_g_ap_has_none():
    exact = exact_mean_abs_difference(10, 0.5)
    assert exact == pytest.approx(0.176, abs=5e-4)
    rng = np.random.default_rng(0)
    c = rng.binomial(10, 0.5, 400)
    f = floors(c, 10, stratify(c, np.full(c.size, 10), 50), rng)
    assert f["a_ppg"] == pytest.approx(exact, abs=0.02)
    assert f["g_ap"] == 0.0
    assert f["delta_plus"] + f["delta_minus"] == pytest.approx(f["a_ppg"])  # |d| = max(d, 0) + max(−d, 0)
    assert f["delta_plus"] == pytest.approx(f["delta_minus"], abs=0.01)  # p = 1/2: symmetric
    assert 0 <= f["g_app"] < 0.02  # |mean gap| over 400 questions: the noise averages out
    assert set(f) == {"g_ap", "g_app", *MEAN_METRICS, *STRATIFIED_METRICS}


def test_floor_shrinks_with_more_samples_per_question():
    rng = np.random.default_rng(1)
    got = {}
    for m in (10, 50):
        c = rng.binomial(m, 0.5, 400)
        got[m] = floors(c, m, stratify(c, np.full(c.size, m), 50), rng)["a_ppg"]
        assert got[m] == pytest.approx(exact_mean_abs_difference(m, 0.5), abs=0.02)
    assert got[50] < got[10] / 2  # ~1/√m: 0.080 vs 0.176


# ------------------------------------------------------------------ 3. a perfect restoration reads its floor


def test_identical_clean_and_mitigated_p_read_sa_ppg_at_its_floor():
    rng = np.random.default_rng(0)
    n, m = 400, 10
    p = rng.beta(1, 1, n)

    def draw() -> Readouts:
        return Readouts.of(rng.binomial(m, p), np.full(n, m), rng.binomial(1, p))

    s = score_counts(draw(), draw(), n_boot=200, rng=rng)
    assert s["sa_ppg"]["interval"] == "jackknife"
    assert s["sa_ppg"]["value"] == pytest.approx(s["sa_ppg"]["floor"], abs=0.03)
    assert s["a_ppg"]["value"] == pytest.approx(s["a_ppg"]["floor"], abs=0.03)
    assert s["sa_ppg"]["floor"] > 0.1  # far from 0: the floor, not the restoration, is what SA-PPG reads
    assert s["sa_ppg"]["corrected"] < s["sa_ppg"]["value"] / 2  # the corrected reading sees through it


# ------------------------------------------------------------------ 4. verdicts


@pytest.mark.parametrize(
    ("lo", "hi", "want"),
    [
        (-0.2, -0.01, "lower"),
        (0.01, 0.2, "higher"),
        (-0.1, 0.1, NOT_DISTINGUISHABLE),
        (-0.1, 0.0, NOT_DISTINGUISHABLE),  # touching 0 is not below it
        (0.0, 0.1, NOT_DISTINGUISHABLE),
        (0.0, 0.0, NOT_DISTINGUISHABLE),
        (float("nan"), float("nan"), NO_INTERVAL),
        (-0.2, float("nan"), NO_INTERVAL),
        (float("-inf"), -0.1, NO_INTERVAL),
    ],
)
def test_verdict_reads_the_interval_of_a_difference(lo, hi, want):
    assert verdict(lo, hi) == want


def test_a_difference_whose_readouts_differ_in_m_says_so_instead_of_blaming_the_size():
    rng = np.random.default_rng(3)
    n = 120
    clean = Readouts.of(rng.binomial(10, 0.7, n), np.full(n, 10), rng.integers(0, 2, n))
    m = np.where(np.arange(n) % 3 == 0, 8, 10)  # a strategy that keeps fewer samples of some questions
    uneven = Readouts.of(rng.binomial(m, 0.8), m, rng.integers(0, 2, n))
    d = paired_difference_counts(clean, uneven, clean, "sa_ppg", B=10, n_boot=50, rng=rng)
    assert d["verdict"] == NO_INTERVAL_UNEQUAL_M and d["why"].startswith("no check") and np.isfinite(d["difference"])


def test_verdict_strings_are_the_documented_ones():
    assert (NOT_DISTINGUISHABLE, NO_INTERVAL) == (
        "not distinguishable at this size",
        "no interval at this size",
    )


# ------------------------------------------------------------------ 5. a stratified interval: printed or withheld


def cell(seed: int = 0, n: int = 400, m: int = 10):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.8, 1.2, n)
    c_cl, c_co = rng.binomial(m, p), rng.binomial(m, np.clip(p + 0.2, 0, 1))
    ms = np.full(n, m)
    return Readouts.of(c_cl, ms, rng.binomial(1, p)), Readouts.of(c_co, ms, rng.binomial(1, p))


@pytest.fixture
def coverage(monkeypatch):
    """Replace the simulated check by a fixed share and critical value 2.5; records the (n, m, B, pair) asked about."""
    calls = []

    def install(share: float):
        def fake(pop, n, m, B, alpha, rng, pair=False, **kw):
            calls.append((n, m, B, pair))
            return dict.fromkeys(STRATIFIED_METRICS, Check(share, 2.5, 0.1))

        monkeypatch.setattr(agg, "self_check", fake)
        return calls

    return install


def test_a_stratified_interval_is_withheld_with_a_reason_naming_n_m_b_when_the_check_fails(coverage):
    calls = coverage(0.5)
    clean, co = cell()
    s = score_counts(clean, co, B=50, n_boot=100, rng=np.random.default_rng(0))
    assert calls == [(400, 10, 50, False)]
    for name in STRATIFIED_METRICS:
        e = s[name]
        assert e["interval"] == "none" and np.isnan(e["ci_low"]) and np.isnan(e["ci_high"]), name
        assert np.isfinite(e["value"]) and e["check"] == 0.5, name
        assert "0.500" in e["why"] and "n=400, m=10, B=50" in e["why"] and f"{CHECK_MIN:.2f}" in e["why"], (
            name
        )
    for name in MEAN_METRICS:  # the bootstrap of the means needs no check
        assert s[name]["interval"] == "bootstrap", name
    note = estimate_note("SA-PPG", s["sa_ppg"])  # what the tables print under SA-PPG
    assert "no interval (withheld: " in note and "n=400, m=10, B=50" in note
    d = paired_difference_counts(clean, co, clean, "sa_ppg", B=50, n_boot=100, rng=np.random.default_rng(0))
    assert calls[-1] == (400, 10, 50, True)
    assert d["interval"] == "none" and d["verdict"] == NO_INTERVAL and "n=400, m=10, B=50" in d["why"]
    assert d["difference"] > 0  # the value is still reported


@pytest.mark.parametrize("share", [CHECK_MIN, 0.97])
def test_a_stratified_interval_is_printed_with_the_calibrated_critical_value_when_the_check_passes(coverage, share):
    coverage(share)
    clean, co = cell()
    s = score_counts(clean, co, B=50, n_boot=100, rng=np.random.default_rng(0))
    strata = stratify(clean.c, clean.m, 50)
    for name in STRATIFIED_METRICS:
        e = s[name]
        point, lo, hi = jackknife_interval((co.c - clean.c) / 10, None, strata, name, 0.05, crit=2.5)
        assert e["interval"] == "jackknife" and e["why"] == "" and e["check"] == share, name
        assert (e["value"], e["ci_low"], e["ci_high"]) == pytest.approx((point, lo, hi)), name
    d = paired_difference_counts(clean, co, clean, "sa_ppg", B=50, n_boot=100, rng=np.random.default_rng(0))
    assert d["interval"] == "jackknife" and d["verdict"] == "higher" and d["ci_low"] > 0


def test_just_below_the_threshold_is_withheld(coverage):
    coverage(CHECK_MIN - 0.0025)  # one of 400 simulated cells short
    s = score_counts(*cell(), B=50, n_boot=100, rng=np.random.default_rng(0))
    assert s["sa_ppg"]["interval"] == "none"
    assert re.search(r"covered 0\.91\d of", s["sa_ppg"]["why"])  # not rounded up to the 0.92 it needs


def test_the_real_check_prints_the_interval_of_a_well_filled_cell():
    s = score_counts(*cell(), B=50, n_boot=100, rng=np.random.default_rng(0))
    assert s["sa_ppg"]["check"] >= CHECK_MIN and s["sa_ppg"]["interval"] == "jackknife"
    assert s["sa_ppg"]["ci_low"] <= s["sa_ppg"]["value"] <= s["sa_ppg"]["ci_high"]


def test_the_checks_population_has_the_spread_of_the_one_the_counts_came_from():
    """Posterior means are narrower than the true p's; the constrained means the self-check simulates from match
    their spread (the fitted prior's) and keep every question's rank."""
    from railsweep.metrics.empirical_bayes import fit_prior

    rng = np.random.default_rng(3)
    p = rng.beta(2.5, 0.9, 400)
    c = rng.binomial(10, p)
    prior = fit_prior(c, np.full_like(c, 10))
    pm, cm = prior.posterior_mean(), prior.constrained_mean()
    assert np.std(pm) < 0.92 * np.std(p)
    assert np.std(cm) == pytest.approx(np.std(p), rel=0.05)
    assert np.mean(cm) == pytest.approx(np.mean(pm), abs=0.01)
    order = np.argsort(pm, kind="stable")
    assert np.all(np.diff(cm[order]) >= -1e-12)
