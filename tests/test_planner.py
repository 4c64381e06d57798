"""The planner (railsweep.metrics.power, `railsweep plan`, the dry run's power lines): its figures against
simulated power, its pilots, and its refusals."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from railsweep import cli
from railsweep.config import CellConfig
from railsweep.metrics.power import difference_se, pilot_from_clean, plan, predicted_power, z_sum
from railsweep.metrics.selfcheck import self_check
from railsweep.results import write_cell
from railsweep.strategies.base import QuestionOutcome
from railsweep.tasks.base import Question

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import planner_power  # noqa: E402


def test_the_planned_design_delivers_its_power_within_a_fifth():
    args = planner_power.make_parser().parse_args(["--m", "20", "--reps", "150"])
    rows = planner_power.run(args)["rows"]
    assert {r["metric"] for r in rows} == {"sa_ppg", "a_ppg", "g_ap"}
    for r in rows:
        assert abs(r["simulated_power"] - 0.8) <= 0.16, r


def test_predicted_power_is_alpha_at_no_difference_and_80_percent_at_the_mde():
    assert predicted_power(0.0, 0.01) == pytest.approx(0.05)
    assert predicted_power(z_sum() * 0.01, 0.01) == pytest.approx(0.8, abs=1e-3)


def test_a_larger_design_detects_a_smaller_difference():
    rng = np.random.default_rng(0)
    pop = pilot_from_clean(rng.binomial(20, rng.beta(2.5, 0.9, 300)), 20, rng)
    small, large = (plan(pop, n, 20, 10, rng) for n in (100, 400))
    for k in ("sa_ppg", "a_ppg", "g_ap"):
        assert large.mde[k] < small.mde[k]
    for k in ("a_ppg", "g_ap"):  # means: SE ∝ 1/√n (SA-PPG's calibrated half-width is not a fixed multiple of it)
        assert large.mde[k] == pytest.approx(small.mde[k] / 2, rel=0.3)


def test_sappg_mde_is_the_printed_half_width_plus_the_power_quantile_of_its_se():
    rng = np.random.default_rng(3)
    pop = pilot_from_clean(rng.binomial(20, rng.beta(2.5, 0.9, 300)), 20, rng)
    got = plan(pop, 200, 20, 10, np.random.default_rng(4)).mde["sa_ppg"]
    rng = np.random.default_rng(4)  # the same draws, in plan's order: the SE, then the interval check
    se = difference_se(pop, 200, 20, 10, rng)["sa_ppg"]
    check = self_check(pop, 200, 20, 10, 0.05, rng, pair=True, reps=200, design_reps=1000)["sa_ppg"]
    assert got == pytest.approx(check.half_width + 0.8416 * se, rel=1e-3)
    assert check.half_width == pytest.approx(check.crit * se, rel=0.3)  # the jackknife se tracks the simulated SE


def test_two_copies_of_one_model_differ_only_by_readout_noise():
    rng = np.random.default_rng(1)
    pop = pilot_from_clean(rng.binomial(50, rng.beta(2.5, 0.9, 300)), 50, rng)
    se10, se50 = (difference_se(pop, 200, m, 10, rng)["a_ppg"] for m in (10, 50))
    assert se50 < se10  # more samples per question, less noise between the two readouts


def _write(out_dir: Path, task_dir: Path, counts, r01, m: int, **cell) -> None:
    cfg = CellConfig(model="/m", task_dir=str(task_dir), m=m, **cell)
    qs = [Question(index=i, question=f"q{i}", solution=f"#### {i}", gold=str(i)) for i in range(len(counts))]
    outcomes = [
        QuestionOutcome(index=i, samples=[], grades=[], c=int(c), m=m, r01=int(g))
        for i, (c, g) in enumerate(zip(counts, r01))
    ]
    write_cell(out_dir / cfg.cell_id, cfg, outcomes, qs, provenance={})


@pytest.fixture
def pilot_dir(tmp_path):
    rng = np.random.default_rng(3)
    p = rng.beta(2.5, 0.9, 80)
    runs = tmp_path / "runs"
    for strategy, adapter, role, q in (("identity", "clean", "clean", p), ("identity", "co", "mitigated", 0.9 * p + 0.1),
                                       ("railcap", "co", "mitigated", 0.95 * p)):  # fmt: skip
        c = rng.binomial(20, q)
        _write(runs, tmp_path, c, c > 10, 20, strategy=strategy, adapter=adapter, family="llama", role=role,
               domain=None if role == "clean" else "gsm8k")  # fmt: skip
    return runs


def test_plan_reads_identity_and_railcap_cells_of_an_earlier_run(pilot_dir, capsys):
    assert cli.main(["plan", "--pilot", str(pilot_dir), "--n", "80", "--m", "20", "--B", "20"]) == 0
    out = capsys.readouterr().out
    assert "pilot: llama" in out and "Identity vs railcap" in out and "80 questions at m = 20" in out
    assert "\n    80   20   20 " in out and "\n  1319   50   50 " in out


def test_plan_with_a_target_difference_prints_the_questions_each_metric_needs(capsys):
    assert cli.main(["plan", "--n", "100", "--m", "10", "20", "--mde", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "questions needed for a difference of 0.05" in out
    lines = out.split("questions needed")[1].strip().splitlines()[2:]
    assert [ln.split()[0] for ln in lines] == ["10", "20"]
    assert all(int(x.replace(",", "")) >= 2 for ln in lines for x in ln.split()[1:])


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--n", "0"], "0"),
        (["--m", "ten"], "ten"),
        (["--mde", "-1"], "-1"),
        (["--power", "1.5"], "1.5"),
        (["--pilot", "/no/such/dir"], "/no/such/dir"),
    ],
)
def test_bad_plan_options_are_one_error_line_with_exit_2(capsys, argv, named):
    assert cli.main(["plan", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("railsweep: error:") and named in err[0]


def test_a_pilot_folder_without_a_clean_cell_is_refused(tmp_path, capsys):
    c = np.arange(10)
    _write(tmp_path / "runs", tmp_path, c, c > 5, 10, strategy="railcap", adapter="co", family="llama",
           domain="gsm8k")  # fmt: skip
    assert cli.main(["plan", "--pilot", str(tmp_path / "runs")]) == 2
    assert "no clean cell" in capsys.readouterr().err
