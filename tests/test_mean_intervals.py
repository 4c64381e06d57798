"""The intervals of the mean metrics (G-AP, G-APP, A-PPG, Δ±): expanded BCa over resamples of the questions
(railsweep.metrics.bootstrap.bca_ci, .expanded_alpha; railsweep.metrics.score_counts)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from railsweep.metrics import Readouts, paired_difference_counts, score_counts
from railsweep.metrics import aggregate as agg
from railsweep.metrics.bootstrap import bca_ci, expanded_alpha, percentile_ci


@pytest.mark.parametrize("n", [10, 50, 100, 200, 1319])
def test_expanded_alpha_is_the_tail_of_a_t_interval_with_the_n_minus_1_divisor(n):
    z = np.sqrt(n / (n - 1)) * stats.t.ppf(0.975, n - 1)
    assert expanded_alpha(n) == pytest.approx(2 * stats.norm.cdf(-z), abs=2e-4)
    assert expanded_alpha(n) < 0.05  # always wider than the plain percentile interval


def test_without_skew_bca_is_the_expanded_percentile_interval():
    values = np.tile([-1.0, 0.0, 1.0], 40)  # symmetric, so the acceleration is 0
    rng = np.random.default_rng(0)
    boot = rng.normal(0.0, 0.1, 20_001)
    boot -= np.median(boot)  # half of the resamples below the point: z0 = 0
    lo, hi = bca_ci(boot, 0.0, values)
    assert (lo, hi) == pytest.approx(percentile_ci(boot, expanded_alpha(values.size)), abs=1e-9)


def test_bca_leans_towards_the_long_tail_of_a_skewed_mean():
    rng = np.random.default_rng(1)
    x = np.where(rng.random(60) < 0.15, rng.uniform(0.3, 1.0, 60), 0.0)  # mostly zero, a few large |Δ|
    boot = x[rng.integers(0, x.size, (4000, x.size))].mean(1)
    lo, hi = bca_ci(boot, float(x.mean()), x)
    p_lo, p_hi = percentile_ci(boot)
    assert hi - x.mean() > x.mean() - lo  # longer upper arm
    assert hi > p_hi


def _coverage(method, reps=400, n=50, seed=2):
    """Share of ``reps`` samples of n skewed values whose interval covers the population mean."""
    rng = np.random.default_rng(seed)
    truth = 0.2 * 0.65  # P(nonzero) · E[value | nonzero]
    hits = 0
    for _ in range(reps):
        x = np.where(rng.random(n) < 0.2, rng.uniform(0.3, 1.0, n), 0.0)
        boot = x[rng.integers(0, n, (1000, n))].mean(1)
        lo, hi = method(boot, x)
        hits += lo <= truth <= hi
    return hits / reps


def test_on_a_skewed_mean_of_fifty_questions_bca_covers_at_its_rate_where_the_percentile_interval_falls_short():
    bca = _coverage(lambda boot, x: bca_ci(boot, float(x.mean()), x))
    plain = _coverage(lambda boot, x: percentile_ci(boot))
    assert bca >= 0.93, bca  # 400 draws: a 0.95 interval reads below 0.93 with P < 0.05
    assert bca > plain


@pytest.fixture
def cells():
    rng = np.random.default_rng(3)
    n, m = 80, 10
    p_cl = rng.beta(2.5, 0.9, n)
    p_co = np.where(rng.random(n) < 0.5, p_cl + 0.5 * (1 - p_cl), p_cl)

    def readout(p):
        return Readouts.of(rng.binomial(m, p), np.full(n, m), (rng.random(n) < p).astype(int))

    return readout(p_cl), readout(p_co), readout(0.13 * p_co)


def test_each_mean_metric_is_the_mean_of_the_per_question_values_its_interval_reads(cells):
    clean, co, _ = cells
    means = agg._means(clean, co, np.arange(clean.c.size))
    for name, values in agg._per_question(clean, co).items():
        assert values.mean() == pytest.approx(float(means[name]), abs=1e-12), name


def test_score_counts_prints_the_bca_interval_of_its_own_resamples(cells):
    clean, co, _ = cells
    s = score_counts(clean, co, B=10, n_boot=500, rng=np.random.default_rng(4))
    idx = np.random.default_rng(4).integers(0, clean.c.size, size=(500, clean.c.size))
    boot = agg._boot_means(clean, co, idx)
    values = agg._per_question(clean, co)
    lo, hi = bca_ci(boot["a_ppg"], s["a_ppg"]["value"], values["a_ppg"])
    assert (s["a_ppg"]["ci_low"], s["a_ppg"]["ci_high"]) == pytest.approx((lo, hi), abs=1e-12)
    for name in agg.MEAN_METRICS:
        e = s[name]
        assert e["ci_low"] <= e["value"] <= e["ci_high"], name


@pytest.mark.parametrize("metric", ["g_ap", "a_ppg", "delta_minus"])
def test_a_paired_difference_of_a_mean_metric_holds_its_point_and_reads_a_verdict(cells, metric):
    clean, co, other = cells
    d = paired_difference_counts(clean, other, co, metric, B=10, n_boot=500, rng=np.random.default_rng(5))
    assert d["ci_low"] <= d["difference"] <= d["ci_high"]
    assert d["interval"] == "bootstrap"
    assert d["verdict"] in {"lower", "higher", agg.NOT_DISTINGUISHABLE}


@pytest.mark.parametrize("n", [2, 3])
def test_a_bca_interval_of_two_or_three_questions_is_the_resamples_range(n):
    """At 2-3 questions the expanded tails underflow to 0: the interval reads the extremes of the resamples."""
    rng = np.random.default_rng(0)
    values = np.array([0.1, 0.6, 0.3][:n])
    boot = values[rng.integers(0, n, size=(1000, n))].mean(axis=1)
    lo, hi = bca_ci(boot, float(values.mean()), values)
    assert (lo, hi) == pytest.approx((boot.min(), boot.max()))


def test_a_cell_of_two_questions_is_scored_each_mean_metric_with_an_interval_or_a_reason():
    """A smoke-sized sweep (``readout.limit: 2``) is scored, not failed on a degenerate bootstrap."""
    m = np.full(2, 4)
    clean = Readouts.of(np.array([1, 3]), m, np.array([0, 1]))
    mitigated = Readouts.of(np.array([4, 2]), m, np.array([1, 1]))
    scores = score_counts(clean, mitigated, B=5, n_boot=200, rng=np.random.default_rng(1))
    assert scores["g_ap"]["interval"] == "bootstrap"
    for metric in ("g_ap", "g_app", "a_ppg", "delta_plus", "delta_minus"):
        s = scores[metric]
        if s["interval"] == "none":
            assert s["why"], (metric, s)
        else:
            assert s["ci_low"] <= s["value"] <= s["ci_high"], (metric, s)
