"""bench/interval_coverage.py: intervals, floors and corrected readings on cells simulated where the truth is known."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from railsweep.metrics.simulate import limit_values, noise_free_values

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import interval_coverage as cov  # noqa: E402


@pytest.fixture(scope="module")
def quick_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("cov") / "q.json"
    assert cov.main(["--quick", "--populations", "smollm2_like", "--out", str(out)]) == 0
    return json.loads(out.read_text())["rows"]


def test_every_target_and_metric_gets_one_row_with_its_coverage(quick_rows):
    keys = {(r["target"], r["metric"]) for r in quick_rows}
    assert keys == {(t, k) for t in cov.TARGETS for k in cov.METRICS}
    for r in quick_rows:
        assert 0.0 <= r["coverage"] <= 1.0
        assert r["width"] >= 0.0 if r["printed_share"] > 0 else r["width"] is None  # the mean width of printed cells
        assert (r["metric"] in cov.STRATIFIED) == ("planner_check" in r)


def test_the_printed_intervals_of_identity_cover_near_their_rate(quick_rows):
    """60 simulated cells: a 95 % interval covers at least 50 of them unless it is far off (P < 0.01)."""
    for r in quick_rows:
        if r["target"] == "identity" and r["printed_share"] == 1.0:
            assert r["coverage"] >= 50 / 60, r


def test_the_floor_estimate_matches_m_cl_read_against_itself(quick_rows):
    for r in quick_rows:
        if r["target"] == "identity" and r["metric"] in ("a_ppg", "sa_ppg", "delta_plus", "s_delta_minus"):
            assert r["floor_mean"] == pytest.approx(r["same_model_design_value"], abs=0.01), r


def test_the_corrected_reading_is_less_biased_than_the_paper_estimator_at_small_m(quick_rows):
    for r in quick_rows:
        if r["target"] == "identity" and r["metric"] in ("a_ppg", "sa_ppg"):
            assert abs(r["corrected_bias"]) < abs(r["paper_bias"]) / 2, r


def test_the_large_sample_value_tends_to_the_noise_free_value_as_m_grows():
    pop = cov.synthetic("smollm2_like", np.random.default_rng(0), size=4000)
    free = noise_free_values(pop, "identity", 10)["a_ppg"]
    gaps = [limit_values(pop, "identity", m, 10)["a_ppg"] - free for m in (10, 50, 400)]
    assert gaps[0] > gaps[1] > gaps[2] > 0 and gaps[2] < 0.02


@pytest.mark.parametrize(
    ("argv", "named"),
    [(["--n", "0"], "--n"), (["--reps", "1"], "--reps"), (["--results-dir", "/no/such"], "/no/such")],
)
def test_bad_options_are_one_error_line_with_exit_2_and_nothing_written(tmp_path, capsys, argv, named):
    out = tmp_path / "x.json"
    assert cov.main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and named in err[0] and not out.exists()
