"""Intervals of score_counts / paired_difference_counts: a bootstrap over all questions for the mean metrics,
a deterministic jackknife for the stratified ones; seeded determinism, intervals that contain their point,
paired comparisons and their verdicts; the bootstrap helpers."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from railsweep.errors import ConfigError
from railsweep.metrics import (
    METRICS,
    Readouts,
    abs_interval,
    bootstrap_ci,
    paired_difference_counts,
    score_counts,
    stratified_indices,
    stratify,
)
from railsweep.metrics.aggregate import MEAN_METRICS, NOT_DISTINGUISHABLE, STRATIFIED_METRICS
from railsweep.metrics.selfcheck import CHECK_MIN, jackknife_interval


def readouts(seed: int, n: int = 400, shift: float = 0.3):
    rng = np.random.default_rng(seed)
    m = np.full(n, 20)
    p = rng.beta(0.4, 1.2, n)
    c_cl = rng.binomial(20, p)
    c_co = rng.binomial(20, np.clip(p + rng.normal(shift, 0.2, n), 0, 1))
    clean = Readouts.of(c_cl, m, rng.binomial(1, c_cl / 20))
    co = Readouts.of(c_co, m, rng.binomial(1, c_co / 20))
    return clean, co


def better_and_worse(seed: int, n: int = 400, shift: float = 0.4):
    """Clean readouts, a strategy that restores M_cl's p (fresh readouts of the same p) and one that does not."""
    rng = np.random.default_rng(seed)
    m = np.full(n, 20)
    p = rng.beta(0.4, 1.2, n)

    def draw(q):
        c = rng.binomial(20, q)
        return Readouts.of(c, m, rng.binomial(1, c / 20))

    return draw(p), draw(p), draw(np.clip(p + shift, 0, 1))


def test_same_seed_gives_identical_scores_and_another_seed_moves_only_the_intervals():
    clean, co = readouts(0)
    a = score_counts(clean, co, n_boot=300, rng=np.random.default_rng(11))
    b = score_counts(clean, co, n_boot=300, rng=np.random.default_rng(11))
    c = score_counts(clean, co, n_boot=300, rng=np.random.default_rng(12))
    np.testing.assert_equal(a, b)  # NaN-aware, nested
    for name in METRICS:
        assert a[name]["value"] == c[name]["value"], name
    assert a["a_ppg"]["ci_low"] != c["a_ppg"]["ci_low"]  # resampled
    for name in STRATIFIED_METRICS:  # the jackknife's centre draws no random numbers; its calibration does
        assert a[name]["ci_low"] + a[name]["ci_high"] == pytest.approx(c[name]["ci_low"] + c[name]["ci_high"]), name


@pytest.mark.parametrize(("seed", "shift"), [(0, 0.3), (1, 0.0), (2, -0.1)])
def test_every_printed_interval_contains_its_point_and_names_its_kind(seed, shift):
    clean, co = readouts(seed, shift=shift)
    score = score_counts(clean, co, n_boot=500, rng=np.random.default_rng(seed))
    assert score["m"] == 20 and score["n_boot"] == 500
    for name in METRICS:
        est = score[name]
        assert est["interval"] == ("bootstrap" if name in MEAN_METRICS else "jackknife"), (name, est)
        assert est["ci_low"] <= est["value"] <= est["ci_high"], (name, est)
        assert est["ci_low"] < est["ci_high"], name
    for name in STRATIFIED_METRICS:
        assert score[name]["check"] >= CHECK_MIN and score[name]["why"] == "", name


def test_resamples_stay_within_the_clean_strata():
    clean, _ = readouts(3)
    strata = stratify(clean.c, clean.m, 50)
    idx = stratified_indices(strata, 50, np.random.default_rng(0))
    assert idx.shape == (50, strata.size)
    assert (strata[idx] == strata[None, :]).all()
    assert len(np.unique(idx)) > strata.size * 0.5  # it really resamples


def test_bootstrap_and_jackknife_intervals_narrow_with_more_questions():
    narrow, wide = (
        score_counts(*readouts(4, n=n), n_boot=300, rng=np.random.default_rng(0)) for n in (800, 100)
    )
    for name in ("a_ppg", "sa_ppg"):
        widths = [s[name]["ci_high"] - s[name]["ci_low"] for s in (narrow, wide)]
        assert widths[0] < widths[1] / 2, (name, widths)  # sqrt(8) ≈ 2.8 expected


def test_g_app_interval_is_the_absolute_image_of_the_signed_interval():
    assert abs_interval(-0.02, 0.05) == (0.0, 0.05)
    assert abs_interval(-0.3, -0.1) == (0.1, 0.3)
    assert not np.signbit(abs_interval(0.0, 0.0)[1])  # never -0.0, which prints as "-0.00"
    clean, _ = readouts(5, shift=0.0)
    co_same = Readouts.of(clean.c, clean.m, clean.r01)
    s = score_counts(clean, co_same, n_boot=200, rng=np.random.default_rng(0))
    assert {k: s["g_app"][k] for k in ("value", "ci_low", "ci_high", "interval")} == {
        "value": 0.0,
        "ci_low": 0.0,
        "ci_high": 0.0,
        "interval": "bootstrap",
    }


@pytest.mark.parametrize("metric", ["sa_ppg", "a_ppg", "g_ap"])
def test_paired_difference_of_identical_strategies_is_exactly_zero_and_not_distinguishable(metric):
    clean, co = readouts(6)
    out = paired_difference_counts(clean, co, co, metric, n_boot=200, rng=np.random.default_rng(0))
    assert out["difference"] == 0.0 and out["ci_low"] == 0.0 and out["ci_high"] == 0.0
    assert out["interval"] == ("jackknife" if metric == "sa_ppg" else "bootstrap")
    assert out["verdict"] == NOT_DISTINGUISHABLE
    assert not {"frac_a_lower", "ci_low_across", "ci_high_across"} & set(out)


@pytest.mark.parametrize("metric", ["sa_ppg", "a_ppg"])
def test_paired_difference_finds_the_restoring_strategy_lower_with_a_paired_interval(metric):
    clean, better, worse = better_and_worse(7)
    out = paired_difference_counts(clean, better, worse, metric, n_boot=300, rng=np.random.default_rng(0))
    assert out["difference"] == pytest.approx(out["value_a"] - out["value_b"]) and out["difference"] < 0
    assert out["ci_low"] <= out["difference"] <= out["ci_high"] < 0 and out["verdict"] == "lower"
    if metric == "sa_ppg":
        assert out["interval"] == "jackknife" and out["check"] >= CHECK_MIN
    flipped = paired_difference_counts(clean, worse, better, metric, n_boot=300, rng=np.random.default_rng(0))
    assert flipped["verdict"] == "higher" and flipped["difference"] == pytest.approx(-out["difference"])
    # the same questions on both sides: the paired interval is no wider than the two marginal ones combined
    # (SA-PPG's marginals straight from the jackknife: the worse cell's own check withholds its printed one)
    if metric == "sa_ppg":
        strata = stratify(clean.c, clean.m, 50)
        marg = [
            jackknife_interval((r.c - clean.c) / 20, None, strata, metric, 0.05)[1:] for r in (better, worse)
        ]
    else:
        marg = [
            (s["ci_low"], s["ci_high"])
            for s in (
                score_counts(clean, r, n_boot=300, rng=np.random.default_rng(0))[metric]
                for r in (better, worse)
            )
        ]
    assert out["ci_high"] - out["ci_low"] <= sum(hi - lo for lo, hi in marg) + 1e-12


def test_bootstrap_ci_of_a_custom_statistic():
    x = np.arange(100, dtype=float)
    strata = np.zeros(100, dtype=int)
    lo, hi = bootstrap_ci(lambda idx: x[idx].mean(axis=-1), strata, n_boot=400, rng=np.random.default_rng(1))
    assert lo < 49.5 < hi and hi - lo < 20


@pytest.mark.parametrize(
    ("kw", "match"),
    [({"n_boot": 0}, "n_boot"), ({"alpha": 1.5}, "alpha"), ({"rng": 3}, "Generator")],
)
def test_bad_bootstrap_arguments_raise_config_error(kw, match):
    clean, co = readouts(8, n=20)
    args = {"n_boot": 10, "alpha": 0.05, "rng": np.random.default_rng(0)} | kw
    with pytest.raises(ConfigError, match=match):
        score_counts(clean, co, **args)


def test_unknown_metric_in_paired_difference_raises_config_error():
    clean, co = readouts(9, n=20)
    with pytest.raises(ConfigError, match="did_not_exist"):
        paired_difference_counts(clean, co, co, "did_not_exist", rng=np.random.default_rng(0))


def test_importing_metrics_pulls_in_neither_torch_nor_pandas():
    code = "import sys, railsweep.metrics; print(sorted(m for m in ('torch', 'pandas') if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "[]"
