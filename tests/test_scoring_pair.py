"""score_pair / paired_difference over per-question result tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from railsweep.analysis import (
    flatten_scores,
    paired_difference,
    score_pair,
    unflatten_scores,
)
from railsweep.analysis.scoring import SCORE_CONSTANTS, join_constants, split_constants
from railsweep.errors import ConfigError, DataError
from railsweep.metrics import METRICS, a_ppg, ppg, sa_ppg, solve_prob, stratify
from railsweep.metrics.aggregate import MEAN_METRICS


def frame(c, m, r01=None, index=None):
    c, m = np.asarray(c), np.asarray(m)
    return pd.DataFrame(
        {
            "question_index": np.arange(len(c)) if index is None else index,
            "c": c,
            "m": m,
            "solve_prob": np.divide(c, m, out=np.zeros(len(c)), where=m > 0),
            "r01": (c > 0).astype(int) if r01 is None else r01,
        }
    )


@pytest.fixture
def pair():
    rng = np.random.default_rng(0)
    n = 300
    m = np.full(n, 50)
    c_cl = rng.binomial(50, rng.beta(0.5, 1.5, n))
    c_co = rng.binomial(50, np.clip(c_cl / 50 + 0.3, 0, 1))
    return frame(c_cl, m), frame(c_co, m)


def test_score_pair_reports_every_aggregate_with_interval_floor_and_counts(pair):
    clean, co = pair
    s = score_pair(clean, co, B=50, n_boot=200, seed=3)
    withheld = {"delta_minus", "s_delta_minus"}  # a shift of +0.3 leaves no question with a negative gap
    for name in METRICS:
        keys = {"value", "ci_low", "ci_high", "interval", "floor", "check", "why"}
        keys |= set() if name in ("g_ap", "g_app") else {"corrected", "nonzero"}
        assert set(s[name]) == keys, name
        kind = "none" if name in withheld else "bootstrap" if name in MEAN_METRICS else "jackknife"
        assert s[name]["interval"] == kind, name
        assert s[name]["floor"] >= 0, name
    for name in ("a_ppg", "sa_ppg", "delta_plus", "s_delta_plus"):  # far above the noise floor
        assert s[name]["value"] > 3 * s[name]["floor"], name
    assert s["delta_minus"]["nonzero"] == 0 and "only 0 question(s)" in s["delta_minus"]["why"]
    assert "sa_ppg_across" not in s
    assert s["n_questions"] == 300 and 1 <= s["n_strata"] <= 50 and s["seed"] == 3 and s["m"] == 50
    delta = ppg(solve_prob(co.c, co.m), solve_prob(clean.c, clean.m))
    assert s["a_ppg"]["value"] == pytest.approx(a_ppg(delta))
    assert s["sa_ppg"]["value"] == pytest.approx(sa_ppg(delta, stratify(clean.c, clean.m, 50)))


def test_rows_are_joined_on_question_index_not_position(pair):
    clean, co = pair
    shuffled = co.sample(frac=1.0, random_state=1)
    np.testing.assert_equal(score_pair(clean, shuffled, n_boot=100), score_pair(clean, co, n_boot=100))


def test_mismatched_question_sets_raise_data_error_naming_missing_indices(pair):
    clean, co = pair
    with pytest.raises(DataError, match=r"missing from mitigated: \[7, 42\]"):
        score_pair(clean, co.drop(index=[7, 42]), n_boot=10)


def test_missing_column_raises_data_error_naming_it(pair):
    clean, co = pair
    with pytest.raises(DataError, match="r01"):
        score_pair(clean, co.drop(columns=["r01"]), n_boot=10)


def test_duplicate_question_index_raises_data_error(pair):
    clean, co = pair
    with pytest.raises(DataError, match="repeat question_index"):
        score_pair(clean, pd.concat([co, co.iloc[:1]]), n_boot=10)


def test_solve_prob_inconsistent_with_counts_raises_data_error(pair):
    clean, co = pair
    bad = co.copy()
    bad.loc[5, "solve_prob"] = 0.123
    with pytest.raises(DataError, match="question_index=5"):
        score_pair(clean, bad, n_boot=10)


def test_m_zero_rows_read_as_zero_solve_probability():
    clean = frame([0, 5, 10], [0, 10, 10])
    s = score_pair(clean, frame([0, 0, 0], [0, 0, 0]), n_boot=10)
    assert s["a_ppg"]["value"] == pytest.approx((0 + 0.5 + 1.0) / 3)


def assert_round_trip(s):
    """unflatten(flatten(s)) gives back s (stratum_n aside), NaN for NaN."""
    back = unflatten_scores(flatten_scores(s))
    assert set(back) == set(s) - {"stratum_n"}
    for key, val in s.items():
        if key in METRICS:
            np.testing.assert_equal({k: back[key][k] for k in val}, val, err_msg=key)
            assert set(back[key]) == set(val), key
        elif key != "stratum_n":
            assert back[key] == val and type(back[key]) is type(val), key


def test_flatten_and_unflatten_round_trip_with_floors_checks_and_printed_intervals(pair):
    s = score_pair(*pair, n_boot=50)
    flat = flatten_scores(s)
    assert all(isinstance(v, float) for v in flat.values())
    assert flat["sa_ppg_ci_low"] == s["sa_ppg"]["ci_low"] and flat["sa_ppg_check"] == s["sa_ppg"]["check"]
    assert flat["a_ppg_floor"] == s["a_ppg"]["floor"] and flat["a_ppg_corrected"] == s["a_ppg"]["corrected"]
    assert flat["m"] == 50.0 and "g_ap_corrected" not in flat and "g_ap_check" not in flat
    assert "stratum_n" not in flat  # a list: readers recompute it from the clean cell's counts
    assert_round_trip(s)


def test_the_scoring_design_goes_to_params_and_comes_back_as_the_same_numbers(pair):
    flat = flatten_scores(score_pair(*pair, B=7, n_boot=50, seed=123456789))
    metrics, params = split_constants(flat)
    assert params == {"score.B": "7", "score.n_boot": "50", "score.alpha": repr(flat["alpha"]), "score.seed": "123456789"}
    assert not set(metrics) & set(SCORE_CONSTANTS) and "sa_ppg" in metrics and "m" in metrics
    assert join_constants(metrics, params) == flat


def test_round_trip_rebuilds_why_an_interval_was_withheld():
    """4 questions: every |Δ| metric's interval is withheld for too few nonzero gaps, the reason named first
    (the stratified ones' check fails too)."""
    s = score_pair(frame([0, 1, 4, 2], [4] * 4), frame([4, 4, 4, 0], [4] * 4), B=4, n_boot=20)
    assert s["a_ppg"]["interval"] == "none" and "only 3 question(s)" in s["a_ppg"]["why"]
    assert s["sa_ppg"]["interval"] == "none" and "only 3 question(s)" in s["sa_ppg"]["why"]
    assert s["sa_ppg"]["nonzero"] == 3 and s["sa_ppg"]["check"] < 0.92
    assert_round_trip(s)


def test_paired_difference_prefers_the_restoring_strategy(pair):
    clean, co = pair
    out = paired_difference(clean, clean.copy(), co, "a_ppg", n_boot=200)
    assert out["value_a"] == 0.0 and out["ci_high"] < 0 and out["verdict"] == "lower"
    assert out["interval"] == "bootstrap" and "frac_a_lower" not in out


def test_paired_difference_unknown_metric_is_a_config_error(pair):
    with pytest.raises(ConfigError, match="unknown metric"):
        paired_difference(pair[0], pair[1], pair[1], "rouge", n_boot=10)


def test_missing_values_raise_data_error_naming_the_column():
    clean = frame([1, 2, 3], [5, 5, 5])
    bad = clean.astype({"c": "Int64"})
    bad.loc[1, "c"] = pd.NA
    with pytest.raises(DataError, match="'c' is missing values"):
        score_pair(clean, bad, n_boot=10)


def test_nullable_integer_columns_score_like_plain_ones():
    clean, co = frame([1, 2, 3], [5, 5, 5]), frame([3, 2, 5], [5, 5, 5])
    nullable = co.astype({"c": "Int64", "m": "Int64", "r01": "Int64"})
    np.testing.assert_equal(score_pair(clean, nullable, n_boot=20), score_pair(clean, co, n_boot=20))


def test_bootstrap_in_blocks_matches_the_unblocked_statistic(pair):
    from railsweep.metrics import Readouts, across_strata_indices
    from railsweep.metrics.aggregate import _boot_means, _means

    clean, co = pair
    cl, mi = Readouts.of(clean.c, clean.m, clean.r01), Readouts.of(co.c, co.m, co.r01)
    idx = across_strata_indices(len(clean), 600, np.random.default_rng(0))
    whole, blocked = _means(cl, mi, idx), _boot_means(cl, mi, idx, rows=256)
    assert set(blocked) == set(MEAN_METRICS)
    for k in whole:
        assert blocked[k].shape == (600,)
        np.testing.assert_allclose(blocked[k], whole[k])
