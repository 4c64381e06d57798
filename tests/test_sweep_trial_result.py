"""A trial takes its cell's result from the engine actor that computed it: the per-question table and the answer
rules' counts come back with the files' bytes, the trial logs them as they come and never reads the cell's files
back; what it logs is what the files hold (railsweep.sweep.run.trial, railsweep.sweep.run.engine_server).

The trials run in this process on a real MLflow server, with the engine actor's ``run_cell`` called directly (no
Ray); reading one of the running trial's own result files raises."""

from __future__ import annotations

import json
import pickle

import pandas as pd
import pyarrow.parquet as pq
import pytest

from railsweep.config import CellConfig
from railsweep.results.io import read_cell, read_metadata
from railsweep.sweep.plan.cells import SweepCell
from railsweep.sweep.run import trial
from railsweep.sweep.run.actors import write_files
from railsweep.sweep.run.engine_server import EngineServer
from railsweep.sweep.run.sweep_run import trial_cells
from railsweep.sweep.tracking.tracker import RESULTS_DIR, TAG_CLEAN_RUN, TAG_QUESTIONS_FILE, Tracker

QUESTIONS = [
    ("Janet has 3 apples and buys 4 more. How many apples does she have?", "3 + 4 = 7\n#### 7"),
    ("A class has 10 students and 2 left. How many students are there now?", "10 - 2 = 8\n#### 8"),
    ("He sells 5 books each day for 2 days. How many books did he sell?", "5 * 2 = 10\n#### 10"),
]


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("task")
    (root / "test.jsonl").write_text("".join(json.dumps({"question": q, "answer": a}) + "\n" for q, a in QUESTIONS))
    shots = [{"question": "There are 2 cars and 3 more arrive. How many?", "answer": "2 + 3 = 5. The answer is 5."}]
    (root / "cot_8shot.json").write_text(json.dumps(shots))
    (root / "leak.json").write_text(json.dumps({"leaked": [0, 2], "unleaked": [1]}))
    return root


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    return EngineServer({"backend": "transformers", "model": str(tiny_model_dir), "adapters": []}, threads=1)


def _cell(tiny_model_dir, task_dir, role: str, seed: int) -> CellConfig:
    return CellConfig(
        model=str(tiny_model_dir), strategy="identity", task_dir=str(task_dir), family="llama", domain="gsm8k",
        leak_split=str(task_dir / "leak.json"), m=3, temperature=1.0, max_new_tokens=8, seed=seed, role=role,
    )  # fmt: skip


def test_an_engine_returns_the_per_question_table_and_counts_its_files_hold(server, tiny_model_dir, task_dir, tmp_path):
    out = server.run_cell(_cell(tiny_model_dir, task_dir, "clean", 0).to_dict())
    paths = write_files(out["files"], tmp_path)
    pd.testing.assert_frame_equal(out["questions"], read_cell(paths["questions"])[1], check_exact=True)
    assert out["grading"] == read_metadata(paths["questions"])["grading"]


def test_an_engine_takes_the_checked_cellconfig_a_trial_sends_as_it_is(
    monkeypatch, server, tiny_model_dir, task_dir, tmp_path
):
    cell = pickle.loads(pickle.dumps(_cell(tiny_model_dir, task_dir, "clean", 2)))  # as Ray ships it
    checked, check = [], CellConfig.__post_init__
    monkeypatch.setattr(CellConfig, "__post_init__", lambda self: (checked.append(self), check(self))[1])
    out = server.run_cell(cell)
    assert checked == [] and out["questions"]["question_index"].tolist() == [0, 1, 2]
    server.run_cell(cell.to_dict())  # a dict, from outside a sweep, is checked
    assert len(checked) == 1


class _OwnFilesUnreadable:
    """Parquet readers that raise on the running trial's own result files (any other file reads as usual)."""

    def __init__(self, monkeypatch):
        self.cell_id: str | None = None
        for name in ("read_table", "read_schema", "read_metadata"):
            monkeypatch.setattr(pq, name, self._guard(getattr(pq, name)))
        monkeypatch.setattr(pd, "read_parquet", self._guard(pd.read_parquet))

    def _guard(self, read):
        def guarded(source, *args, **kwargs):
            if self.cell_id is not None and str(source).rsplit("/", 1)[-1].startswith(self.cell_id):
                raise AssertionError(f"the trial of cell {self.cell_id} read its own result file {source}")
            return read(source, *args, **kwargs)

        return guarded


def _run_trial(monkeypatch, guard, server, ctx, cell_id):
    monkeypatch.setattr(trial, "_decode", lambda ctx, cid, cfg, board: server.run_cell(cfg))
    guard.cell_id = cell_id
    try:
        return trial.run_cell_trial({"cell_id": cell_id}, ctx)
    finally:
        guard.cell_id = None


def _logged_as_the_files_say(tracker, run, tmp_path):
    """The metrics the cell's uploaded per-question file gives, read back after the trial."""
    path = tracker.download(run.info.run_id, f"{RESULTS_DIR}/{run.data.tags[TAG_QUESTIONS_FILE]}", tmp_path)
    return {**trial.cell_summary(read_cell(path)[1]), **trial.grading_metrics(read_metadata(path)["grading"])}


def test_a_trial_logs_its_cell_from_the_engine_without_reading_the_cells_files_back(
    monkeypatch, mlflow_server, server, tiny_model_dir, task_dir, tmp_path
):
    from ray import tune

    monkeypatch.setattr(tune, "report", lambda result: None)
    clean = SweepCell(_cell(tiny_model_dir, task_dir, "clean", 0), None)
    mitigated = SweepCell(_cell(tiny_model_dir, task_dir, "mitigated", 1), clean.cell_id)
    tracker = Tracker(mlflow_server)
    experiment = tracker.ensure_experiment("trial-result-from-the-engine")
    parent, _ = tracker.parent_run("trial-result", "trial result", {}, resume=False)
    ctx = trial.SweepContext(
        tracking_uri=mlflow_server, experiment_id=experiment, parent_id=parent, sweep_id="trial-result",
        cells=trial_cells([clean, mitigated]), B=20, n_boot=20, clean_wait_s=60,
    )  # fmt: skip
    guard = _OwnFilesUnreadable(monkeypatch)
    for cell in (clean, mitigated):
        result = _run_trial(monkeypatch, guard, server, ctx, cell.cell_id)
        run = tracker.finished_run(cell.cell_id)
        assert run is not None and run.info.status == "FINISHED"
        expected = _logged_as_the_files_say(tracker, run, tmp_path / cell.cell_id)
        assert {k: run.data.metrics[k] for k in expected} == pytest.approx(expected, rel=1e-12)
        assert result["n_questions"] == len(QUESTIONS)
    assert run.data.tags[TAG_CLEAN_RUN] == tracker.finished_run(clean.cell_id).info.run_id
    assert any(k.startswith("score.") for k in run.data.params)  # the pair was scored against the clean table
