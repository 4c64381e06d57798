"""``railsweep rails`` end to end on the smoke world: forced departures, exposure, RailCap on M_cl, caps."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from railsweep.cli import main
from railsweep.diagnostics.rails import Progress, RailsSettings, _ratio, summarise, wilson
from railsweep.errors import ConfigError

ARGS = [
    "--world",
    "smoke",
    "--limit",
    "3",
    "--m",
    "3",
    "--runs",
    "2",
    "--ks",
    "1,2",
    "--max-new-tokens",
    "24",
]


def test_wilson_interval_matches_the_textbook_formula_and_covers_the_estimate():
    lo, hi = wilson(3, 10)
    assert math.isclose(lo, 0.1078, abs_tol=1e-4) and math.isclose(hi, 0.6032, abs_tol=1e-4)
    assert wilson(0, 5)[0] == 0.0 and wilson(5, 5)[1] == 1.0
    assert all(math.isnan(x) for x in wilson(0, 0))


def test_kept_share_is_forced_solves_over_the_same_questions_unforced_rate():
    s = RailsSettings(ks=(1,), runs=2, n_boot=200)
    questions = [
        dict(
            index=i,
            r_clean=r,
            r_clean_railcap=r / 2,
            r_co_railcap=0.5,
            correct_clean=2,
            exposed_steps=e,
            exposed_answers=a,
        )
        for i, (r, e, a) in enumerate([(1.0, 6, 2), (0.5, 0, 0)])
    ]
    runs = [
        dict(
            index=0,
            k=1,
            correct=True,
            r_clean=1.0,
            forced=1,
            steps=[3],
            classes=["wording"],
            **{"class": "wording"},
            runner_up_agrees=1,
        ),
        dict(
            index=0,
            k=1,
            correct=False,
            r_clean=1.0,
            forced=1,
            steps=[5],
            classes=["number"],
            **{"class": "number"},
            runner_up_agrees=1,
        ),
        dict(
            index=1,
            k=1,
            correct=False,
            r_clean=0.5,
            forced=1,
            steps=[2],
            classes=["wording"],
            **{"class": "wording"},
            runner_up_agrees=0,
        ),
    ]
    samples = [
        dict(index=0, triggers=3, caps=3, departures=2),
        dict(index=1, triggers=1, caps=0, departures=0),
    ]
    out = summarise(questions, runs, samples, s)
    wording = out["recovery"]["k1_wording"]
    assert wording["runs"] == 2 and wording["solve_rate"] == 0.5
    assert math.isclose(wording["kept"]["value"], 1 / 1.5)
    assert out["recovery"]["k1_all"]["runs"] == 3 and out["recovery"]["k1_final answer"]["runs"] == 0
    assert out["exposure"]["steps_per_answer"]["value"] == 1.5
    assert out["exposure"]["share_with_one"]["value"] == 0.5
    assert math.isclose(out["railcap_on_clean"]["relative_change"]["value"], -0.5)
    co = out["railcap_on_co"]
    assert co["caps_per_sample"]["value"] == 2 and co["departures_per_sample"]["value"] == 1
    assert co["replay_matches_engine"] == 0.5 and out["runner_up_agreement"] == 2 / 3
    kept = wording["kept"]
    assert kept["lo"] <= kept["value"] <= kept["hi"]


@pytest.fixture(scope="module")
def rails_out(smoke_world, tmp_path_factory):
    out = tmp_path_factory.mktemp("rails") / "out"
    assert main(["rails", *ARGS, "--cache-dir", str(smoke_world), "--out", str(out)]) == 0
    return out


def test_rails_command_writes_every_table_and_the_summary(rails_out):
    summary = json.loads((rails_out / "rails.json").read_text())
    assert {"recovery", "exposure", "railcap_on_clean", "railcap_on_co"} <= set(summary)
    questions = pd.read_parquet(rails_out / "rails_questions.parquet")
    assert len(questions) == 3
    samples = pd.read_parquet(rails_out / "rails_samples.parquet")
    assert len(samples) == 9
    runs = pd.read_parquet(rails_out / "rails_runs.parquet")
    solvable = int((questions["r_clean"] > 0).sum())
    assert len(runs) == solvable * 2 * 2
    assert summary["recovery"]["k1_all"]["runs"] == solvable * 2


def test_a_rails_run_stopped_before_the_forced_decodes_keeps_the_finished_tables(smoke_world, tmp_path, monkeypatch):
    import railsweep.diagnostics.rails as rails_module

    def stop(*args, **kwargs):
        raise RuntimeError("stopped")

    monkeypatch.setattr(rails_module, "forced_runs", stop)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match="stopped"):
        main(["rails", *ARGS, "--cache-dir", str(smoke_world), "--out", str(out)])
    assert len(pd.read_parquet(out / "rails_questions.parquet")) == 3
    assert len(pd.read_parquet(out / "rails_samples.parquet")) == 9
    assert not (out / "rails.json").exists() and not (out / "rails_runs.parquet").exists()


def test_forced_steps_are_runner_ups_and_replayed_caps_match_the_engine(rails_out):
    runs = pd.read_parquet(rails_out / "rails_runs.parquet")
    if len(runs):
        # every forced step the decode reached: the engine counted it, and the emitted token is the runner-up
        assert (runs["forced"] == runs["classes"].map(len)).all()
        assert (runs["forced"] <= runs["k"]).all()
        assert (runs["runner_up_agrees"] == runs["forced"]).all()
    samples = pd.read_parquet(rails_out / "rails_samples.parquet")
    assert (samples["caps"] == samples["triggers"]).all()
    assert (samples["departures"] <= samples["caps"]).all()


def test_rails_command_is_reproducible_with_its_seed(rails_out, smoke_world, tmp_path):
    again = tmp_path / "again"
    assert main(["rails", *ARGS, "--cache-dir", str(smoke_world), "--out", str(again)]) == 0
    a = pd.read_parquet(rails_out / "rails_runs.parquet")
    b = pd.read_parquet(again / "rails_runs.parquet")
    pd.testing.assert_frame_equal(a, b)
    assert json.loads((rails_out / "rails.json").read_text()) == json.loads(
        (again / "rails.json").read_text()
    )


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--ks", "1,x"], "argument --ks: must be comma-separated integers >= 1, got '1,x'"),
        (["--ks", "0"], "argument --ks: must be comma-separated integers >= 1, got '0'"),
        (["--runs", "0"], "argument --runs: must be"),
        (["--n", "0"], "argument --n: must be"),
        (["--limit", "0"], "argument --limit: must be"),
    ],
)
def test_bad_rails_options_fail_before_any_work(extra, message, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["rails", "--world", "smoke", *extra, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("railsweep: error:") and message in err
    assert not out.exists()


def test_bad_rails_settings_are_config_errors():
    with pytest.raises(ConfigError):
        RailsSettings(temperature=0.0)
    with pytest.raises(ConfigError):
        RailsSettings(ks=())


def test_a_ratio_over_few_questions_has_a_finite_interval_from_the_resamples_that_hold_one():
    """Resamples that draw no question with a denominator have no ratio; they are left out, not turned into nan."""
    num, den = [0.0] * 9 + [1.0], [0.0] * 9 + [2.0]
    out = _ratio(num, den, RailsSettings(), "test")
    assert out["value"] == 0.5 and (out["lo"], out["hi"]) == (0.5, 0.5)


def test_progress_counts_every_decoded_response_and_ends_with_nothing_left():
    lines = []
    s = RailsSettings(m=3, ks=(1, 2), runs=5)
    p = Progress(4, s, lines.append)
    assert lines[-1] == "rails: 4 questions, at most 88 responses to decode"  # 3 readouts x 4 x 4 + 4 x 2 x 5
    p.step("M_cl readout", 16, forced_jobs=10)  # two questions solved once or more: 2 x 2 x 5
    assert "(16/58 responses" in lines[-1] and "eta" in lines[-1]
    p.step("RailCap on M_cl", 16)
    p.step("RailCap on M_co", 16)
    p.step("forced runs 10/10", 10)
    assert "(58/58 responses" in lines[-1] and lines[-1].endswith("eta 0s)")


def test_progress_without_a_log_stays_silent_and_keeps_counting():
    p = Progress(2, RailsSettings(m=1, ks=(1,), runs=1), None)
    p.step("M_cl readout", 4, forced_jobs=0)
    assert (p.done, p.total) == (4, 12)
