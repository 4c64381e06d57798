"""Stratified bootstrap: seeded determinism, strata preserved, CIs that cover, paired comparisons."""

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


def readouts(seed: int, n: int = 400, shift: float = 0.3):
    rng = np.random.default_rng(seed)
    m = np.full(n, 20)
    p = rng.beta(0.4, 1.2, n)
    c_cl = rng.binomial(20, p)
    c_co = rng.binomial(20, np.clip(p + rng.normal(shift, 0.2, n), 0, 1))
    clean = Readouts.of(c_cl, m, rng.binomial(1, c_cl / 20))
    co = Readouts.of(c_co, m, rng.binomial(1, c_co / 20))
    return clean, co


def test_same_seed_gives_identical_scores_and_other_seed_differs():
    clean, co = readouts(0)
    a = score_counts(clean, co, n_boot=300, rng=np.random.default_rng(11))
    b = score_counts(clean, co, n_boot=300, rng=np.random.default_rng(11))
    c = score_counts(clean, co, n_boot=300, rng=np.random.default_rng(12))
    assert a == b
    assert a["sa_ppg"]["value"] == c["sa_ppg"]["value"]
    assert a["sa_ppg"]["ci_low"] != c["sa_ppg"]["ci_low"]


@pytest.mark.parametrize(("seed", "shift"), [(0, 0.3), (1, 0.0), (2, -0.1)])
def test_every_ci_contains_its_point_estimate(seed, shift):
    clean, co = readouts(seed, shift=shift)
    score = score_counts(clean, co, n_boot=500, rng=np.random.default_rng(seed))
    for name in METRICS:
        est = score[name]
        assert est["ci_low"] <= est["value"] <= est["ci_high"], (name, est)
        assert est["ci_low"] < est["ci_high"], name


def test_resamples_stay_within_the_clean_strata():
    clean, _ = readouts(3)
    strata = stratify(clean.c, clean.m, 50)
    idx = stratified_indices(strata, 50, np.random.default_rng(0))
    assert idx.shape == (50, strata.size)
    assert (strata[idx] == strata[None, :]).all()
    assert len(np.unique(idx)) > strata.size * 0.5  # it really resamples


def test_ci_narrows_with_more_questions():
    narrow, wide = (
        score_counts(*readouts(4, n=n), n_boot=300, rng=np.random.default_rng(0)) for n in (1600, 100)
    )
    width = {k: s["a_ppg"]["ci_high"] - s["a_ppg"]["ci_low"] for k, s in (("n", narrow), ("w", wide))}
    assert width["n"] < width["w"] / 2


def test_g_app_ci_is_the_absolute_image_of_the_signed_ci():
    assert abs_interval(-0.02, 0.05) == (0.0, 0.05)
    assert abs_interval(-0.3, -0.1) == (0.1, 0.3)
    clean, co = readouts(5, shift=0.0)
    co_same = Readouts.of(clean.c, clean.m, clean.r01)
    s = score_counts(clean, co_same, n_boot=200, rng=np.random.default_rng(0))
    assert s["g_app"] == {"value": 0.0, "ci_low": 0.0, "ci_high": 0.0}


def test_paired_difference_of_identical_strategies_is_exactly_zero():
    clean, co = readouts(6)
    out = paired_difference_counts(clean, co, co, "sa_ppg", n_boot=200, rng=np.random.default_rng(0))
    assert out["difference"] == 0.0 and out["ci_low"] == 0.0 and out["ci_high"] == 0.0


def test_paired_difference_detects_the_better_strategy_and_shares_resamples():
    clean, worse = readouts(7, shift=0.4)
    better = Readouts.of(clean.c, clean.m, clean.r01)  # perfect restoration
    out = paired_difference_counts(clean, better, worse, "sa_ppg", n_boot=300, rng=np.random.default_rng(0))
    assert out["difference"] == pytest.approx(out["value_a"] - out["value_b"]) and out["difference"] < 0
    assert out["ci_high"] < 0 and out["frac_a_lower"] == 1.0
    # same resampled questions: the paired CI is narrower than the two marginal CIs combined
    marg = [
        score_counts(clean, r, n_boot=300, rng=np.random.default_rng(0))["sa_ppg"] for r in (better, worse)
    ]
    assert out["ci_high"] - out["ci_low"] <= sum(m["ci_high"] - m["ci_low"] for m in marg) + 1e-12


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
