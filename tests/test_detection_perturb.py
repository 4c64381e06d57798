"""Perturbation sensitivity: original minus paraphrase solve probability per item, with a Newcombe CI."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from detection_cells import write_cells

from railsweep.detection.base import DetectInputs, Item
from railsweep.detection.perturb import Perturb, PerturbConfig, perturbation_table
from railsweep.errors import ConfigError, DataError


def table(cs, ms, start=0, leaked=None):
    qi = np.arange(start, start + len(cs))
    c, m = np.asarray(cs), np.asarray(ms)
    sp = np.divide(c, m, out=np.zeros(len(c)), where=m > 0)
    return pd.DataFrame({"question_index": qi, "leaked": leaked, "c": c, "m": m, "solve_prob": sp, "r01": 0})


def naive_wilson(c, m, z):
    p = c / m
    centre = (p + z * z / (2 * m)) / (1 + z * z / m)
    half = z * math.sqrt(p * (1 - p) / m + z * z / (4 * m * m)) / (1 + z * z / m)
    return centre - half, centre + half


def test_difference_equals_a_naive_per_item_difference_and_ci_is_newcombe():
    rng = np.random.default_rng(3)
    m_o, m_p = rng.integers(1, 60, 25), rng.integers(1, 9, 25)  # lopsided sample counts
    c_o, c_p = rng.integers(0, m_o + 1), rng.integers(0, m_p + 1)
    got = perturbation_table(table(c_o, m_o), table(c_p, m_p), alpha=0.1)
    z = 1.6448536269514722
    for i in range(25):
        po, pp = c_o[i] / m_o[i], c_p[i] / m_p[i]
        lo_o, hi_o = naive_wilson(c_o[i], m_o[i], z)
        lo_p, hi_p = naive_wilson(c_p[i], m_p[i], z)
        assert got.difference[i] == pytest.approx(po - pp)
        assert got.ci_low[i] == pytest.approx(po - pp - math.sqrt((po - lo_o) ** 2 + (hi_p - pp) ** 2))
        assert got.ci_high[i] == pytest.approx(po - pp + math.sqrt((hi_o - po) ** 2 + (pp - lo_p) ** 2))
        assert got.ci_low[i] <= got.difference[i] <= got.ci_high[i]
        assert -1 <= got.ci_low[i] and got.ci_high[i] <= 1


def test_rows_are_joined_on_question_index_not_position():
    o = table([4, 0, 2], [4, 4, 4])
    p = table([0, 0, 2], [4, 4, 4]).iloc[::-1]
    assert perturbation_table(o, p).difference.tolist() == [1.0, 0.0, 0.0]


def test_zero_samples_give_an_undefined_score():
    got = perturbation_table(table([1, 0], [2, 0]), table([1, 1], [2, 2]))
    assert np.isnan(got.difference[1]) and np.isnan(got.ci_low[1])


def test_misaligned_tables_are_refused_naming_the_first_mismatched_index():
    with pytest.raises(DataError, match="first mismatched question_index=0, only in the original"):
        perturbation_table(table([1, 1, 1], [2, 2, 2]), table([1, 1, 1], [2, 2, 2], start=1))
    with pytest.raises(DataError, match="question_index=2, only in the original"):
        perturbation_table(table([1, 1, 1], [2, 2, 2]), table([1, 1], [2, 2]))


def test_bad_alpha_is_refused():
    with pytest.raises(ConfigError):
        PerturbConfig(alpha=1.0)


def test_detector_reads_two_cells_and_scores_control_items_nan(tmp_path):
    orig, para = write_cells(tmp_path, [4, 3, 0], [1, 3, 2])
    items = [Item(i, "test", "", "") for i in (2, 0)] + [Item(0, "control", "c", "y")]
    (scores,) = Perturb().score(items, DetectInputs(original=orig, paraphrased=para))
    assert scores.score[:2].tolist() == [-0.5, 0.75]
    assert np.isnan(scores.score[2])
    assert scores.extras["ci_low"][1] < 0.75 < scores.extras["ci_high"][1]


def test_cli_perturb_writes_one_row_per_question_with_the_truth(tmp_path, capsys):
    from railsweep.cli import main
    from railsweep.detection.output import read_detections

    orig, para = write_cells(tmp_path, [4, 3, 0, 4], [0, 3, 1, 4])
    out = tmp_path / "det"
    args = ["detect", "--detector", "perturb", "--original", str(orig), "--paraphrased", str(para),
            "--threshold", "0.5", "--n-boot", "20", "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    det = read_detections(out)
    assert det.item_id.tolist() == [0, 1, 2, 3]
    assert det.score.tolist() == [1.0, 0.0, -0.25, 0.0]
    assert det.flagged.tolist() == [True, False, False, False]
    assert det.leaked.tolist() == [True, False, True, False]
    assert {"x_ci_low", "x_ci_high", "x_p_original", "x_p_paraphrased"} <= set(det.columns)
    assert "| perturb |" in capsys.readouterr().out


def test_cli_misaligned_cells_give_one_error_and_write_nothing(tmp_path, capsys):
    from railsweep.cli import main

    orig, para = write_cells(tmp_path, [4, 3, 0], [0, 3, 1], para_indices=[0, 1, 5])
    out = tmp_path / "det"
    args = [
        "detect",
        "--detector",
        "perturb",
        "--original",
        str(orig),
        "--paraphrased",
        str(para),
        "--out",
        str(out),
    ]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "first mismatched question_index=2" in err and err.count("error") == 1
    assert not out.exists()
