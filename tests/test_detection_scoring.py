"""ROC AUC, threshold calibration and the truth table against naive re-computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from railsweep.detection.scoring import calibrate_threshold, flag_rate
from railsweep.detection.truth import to_markdown, truth_table
from railsweep.errors import ConfigError, DataError
from railsweep.metrics.auc import auc_ci, roc_auc


def naive_auc(score, label):
    pos = [s for s, y in zip(score, label) if y]
    neg = [s for s, y in zip(score, label) if not y]
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


@pytest.mark.parametrize("seed", range(5))
def test_auc_equals_the_pairwise_count_with_ties_as_halves(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 60))
    score = rng.integers(0, 5, size=k).astype(float)  # many ties
    label = rng.random(k) < 0.2  # lopsided classes
    label[0], label[1] = True, False
    assert roc_auc(score, label) == pytest.approx(naive_auc(score, label))


def test_auc_ignores_nan_scores_and_is_nan_without_a_class():
    assert roc_auc([1.0, np.nan, 0.0], [True, True, False]) == 1.0
    assert np.isnan(roc_auc([1.0, 2.0], [True, True]))


@pytest.mark.parametrize("rate", [0.0, 0.01, 0.1, 0.34, 1.0])
def test_the_calibrated_threshold_is_the_smallest_control_score_meeting_the_rate(rate):
    control = np.array([0.0, 0.0, 0.1, 0.2, 0.2, 0.5, 0.9, np.nan])
    t = calibrate_threshold(control, rate)
    c = control[~np.isnan(control)]
    assert np.mean(c > t) <= rate
    assert all(np.mean(c > cand) > rate for cand in c if cand < t)


def test_calibration_refuses_a_rate_outside_the_unit_interval_and_an_empty_control():
    with pytest.raises(ConfigError, match="1.5"):
        calibrate_threshold(np.zeros(3), 1.5)
    with pytest.raises(DataError):
        calibrate_threshold(np.array([np.nan]), 0.01)


def test_flag_rate_counts_strictly_above_the_threshold():
    assert flag_rate(np.array([0.0, 0.5, 1.0, np.nan]), 0.5) == pytest.approx(1 / 3)


def test_auc_ci_brackets_the_estimate_and_is_seeded():
    rng = np.random.default_rng(1)
    score = np.r_[rng.normal(1, 1, 40), rng.normal(0, 1, 60)]
    label = np.r_[np.ones(40, bool), np.zeros(60, bool)]
    lo, hi = auc_ci(score, label, 300, rng=np.random.default_rng(3))
    assert lo <= roc_auc(score, label) <= hi
    assert (lo, hi) == auc_ci(score, label, 300, rng=np.random.default_rng(3))


def test_truth_table_reports_tpr_fpr_and_control_rate_per_group():
    table = pd.DataFrame(
        {
            "detector": "ngram",
            "setting": "n=13",
            "family": None,
            "domain": "gsm8k",
            "item_id": range(6),
            "group": ["test"] * 4 + ["control"] * 2,
            "leaked": pd.array([True, True, False, False, None, None], dtype="boolean"),
            "score": [0.9, 0.1, 0.0, 0.6, 0.0, 0.7],
            "threshold": 0.5,
            "threshold_source": "given",
            "flagged": pd.array([True, False, False, True, False, True], dtype="boolean"),
        }
    )
    row = truth_table(table, n_boot=50).iloc[0]
    assert row.tpr == 0.5 and row.fpr_unleaked == 0.5 and row.control_rate == 0.5
    assert row.auc == pytest.approx(naive_auc([0.9, 0.1, 0.0, 0.6], [True, True, False, False]))
    assert "| ngram | n=13 | - | gsm8k |" in to_markdown(truth_table(table, n_boot=10))
