"""MLflow layer and sweep figures without a server or Ray: retries, flat params, plots."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from railsweep.sweep.tracking.tracker import (
    TAG_CELL_ID,
    TAG_ERROR,
    Tracker,
    TrackingError,
    provenance_tags,
    retry,
)


def test_transient_errors_are_retried_with_backoff_then_succeed():
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("server restarting")
        return "ok"

    assert retry(flaky, "flaky call", attempts=4, base_delay=0.001) == "ok"
    assert len(calls) == 3


def test_a_server_that_stays_away_ends_in_one_clear_tracking_error():
    with pytest.raises(TrackingError, match=r"create experiment.*after 2 attempts"):
        retry(lambda: (_ for _ in ()).throw(ConnectionError("refused")), "create experiment", attempts=2,
              base_delay=0.001)  # fmt: skip


def test_tracker_against_a_dead_server_raises_tracking_error(monkeypatch):
    monkeypatch.setenv("RAILSWEEP_MLFLOW_ATTEMPTS", "1")
    with pytest.raises(TrackingError, match="experiment"):
        Tracker("http://127.0.0.1:9").ensure_experiment("x")


def test_every_metric_param_and_tag_reaches_mlflow_beyond_one_batchs_limits():
    batches = []

    class Client:
        def log_batch(self, run_id, metrics, params, tags):
            assert len(metrics) <= 1000 and len(params) <= 100 and len(tags) <= 100  # MLflow's limits
            batches.append((len(metrics), len(params), len(tags)))

    tracker = Tracker.__new__(Tracker)
    tracker.client = Client()
    tracker.log("r", metrics={f"m{i}": i for i in range(2500)}, params={f"p{i}": i for i in range(150)},
                tags={"t": "x"})  # fmt: skip
    assert batches == [(1000, 100, 1), (1000, 50, 0), (500, 0, 0)]


def test_a_stopped_sweep_leaves_no_cell_run_running():
    ended = []

    def run(rid, status):
        return type("Run", (), {"info": type("Info", (), {"run_id": rid, "status": status})()})()

    class Client:
        def search_runs(self, experiments, filter_string, max_results, page_token, order_by):
            assert "'parent'" in filter_string
            return type("Page", (list,), {"token": None})([run("a", "FINISHED"), run("b", "RUNNING"), run("c", "FAILED")])

        def set_terminated(self, run_id, status):
            ended.append((run_id, status))

    tracker = Tracker.__new__(Tracker)
    tracker.client, tracker.experiment_id = Client(), "0"
    tracker.stop_sweep("parent")
    # the parent first, so a trial failing under a dead engine reads the stop; finished and failed cells keep theirs
    assert ended == [("parent", "KILLED"), ("b", "KILLED")]


class _CellClient:
    """get_run / set_terminated / log_batch / update_run / delete_tag over runs held by id."""

    def __init__(self, **runs):
        self.runs, self.calls = runs, []

    def get_run(self, run_id):
        return self.runs[run_id]

    def set_terminated(self, run_id, status):
        self.runs[run_id].info.status = status
        self.calls.append(("end", run_id, status))

    def log_batch(self, run_id, metrics, params, tags):
        self.runs[run_id].data.tags.update({t.key: t.value for t in tags})

    def update_run(self, run_id, status):
        self.runs[run_id].info.status = status

    def delete_tag(self, run_id, key):
        del self.runs[run_id].data.tags[key]
        self.calls.append(("delete_tag", run_id, key))

    def search_runs(self, ids, filter_string, max_results, page_token, order_by):
        return _Page([self.runs["cell"]])


def _cell_tracker(parent_status: str, cell_tags: dict | None = None) -> Tracker:
    tracker = Tracker.__new__(Tracker)
    tracker.experiment_id = "1"
    tracker.client = _CellClient(parent=_bare_run("parent", parent_status, {}),
                                 cell=_bare_run("cell", "RUNNING", dict(cell_tags or {})))  # fmt: skip
    return tracker


def test_a_cell_that_raises_while_its_sweep_runs_ends_failed_with_its_error():
    tracker = _cell_tracker("RUNNING")
    tracker.end_failed_cell("cell", "parent", "RuntimeError: out of memory")
    cell = tracker.client.runs["cell"]
    assert cell.info.status == "FAILED" and cell.data.tags[TAG_ERROR] == "RuntimeError: out of memory"


def test_a_cell_whose_engine_dies_under_a_stopped_sweep_ends_killed_without_an_error():
    tracker = _cell_tracker("KILLED")
    tracker.end_failed_cell("cell", "parent", "ActorDiedError: the actor died unexpectedly")
    cell = tracker.client.runs["cell"]
    assert cell.info.status == "KILLED" and TAG_ERROR not in cell.data.tags


def test_a_reopened_cell_run_loses_the_error_of_its_earlier_try():
    tracker = _cell_tracker("RUNNING", {TAG_ERROR: "ActorDiedError: earlier try"})
    tracker.client.runs["cell"].info.status = "FAILED"
    run_id = tracker.start_cell_run("parent", "c1", "cell", {})
    assert run_id == "cell" and tracker.client.runs["cell"].info.status == "RUNNING"
    assert TAG_ERROR not in tracker.client.runs["cell"].data.tags


def test_provenance_becomes_flat_tags():
    tags = provenance_tags({"git": {"commit": "abc", "dirty": True}, "packages": {"torch": "2.13"},
                            "python": "3.11", "datasets": {"/d/test.jsonl": "f00"}})  # fmt: skip
    assert tags == {"git.commit": "abc", "git.dirty": "True", "python": "3.11", "pkg.torch": "2.13",
                    "data.sha256.test.jsonl": "f00"}  # fmt: skip


def test_readout_stability_curve_matches_a_naive_split_half_computation(tmp_path):
    from railsweep.analysis.plots import readout_stability_plot, stability_curve

    rng = np.random.default_rng(3)
    m, n = 10, 7
    correct = rng.random((n, m)) < rng.random((n, 1))  # lopsided per-question solve probabilities
    rows = [
        {"question_index": q, "sample_index": s, "correct": bool(correct[q, s])}
        for q in range(n)
        for s in range(m)
    ]
    rows += [
        {"question_index": q, "sample_index": -1, "correct": None} for q in range(n)
    ]  # greedy rows are ignored
    curve = stability_curve(pd.DataFrame(rows), ms=(1, 2, 5))
    assert list(curve["m"]) == [1, 2, 5]
    for k, gap in zip(curve["m"], curve["gap"]):
        naive = sum(abs(correct[q, :k].mean() - correct[q, 5 : 5 + k].mean()) for q in range(n)) / n
        assert gap == pytest.approx(naive)
    assert readout_stability_plot({"M_cl": curve}, tmp_path / "f.png").stat().st_size > 0


def test_sweep_figures_are_written(tmp_path):
    from railsweep.analysis.plots import sappg_bars, scatter_clean_vs_mitigated, stratum_deltas

    q = np.arange(12)
    clean = pd.DataFrame({"question_index": q, "c": q % 5, "m": 4 + 0 * q, "leaked": q % 2 == 0})
    clean["c"] = np.minimum(clean["c"], 4)
    clean["solve_prob"] = clean["c"] / clean["m"]
    mit = clean.assign(c=4 - clean["c"])
    mit["solve_prob"] = mit["c"] / mit["m"]
    assert scatter_clean_vs_mitigated(clean, mit, tmp_path / "s.png", "t").is_file()
    assert stratum_deltas(clean, {"A": mit, "B": clean}, tmp_path / "d.png", B=4).is_file()
    scores = pd.DataFrame({"setting": ["g × l", "g × l", "p × l"], "strategy": ["A", "B", "A"],
                           "value": [0.2, 0.1, 0.3], "ci_low": [0.1, 0.0, 0.2], "ci_high": [0.3, 0.2, 0.4]})  # fmt: skip
    assert sappg_bars(scores, tmp_path / "b.png").is_file()
    assert not list(tmp_path.glob(".*"))  # no temporary files left behind


class _Page(list):
    token = None


class _FakeClient:
    """search_runs over in-memory runs, newest first, honouring the status and cell-id clauses it is sent."""

    def __init__(self, runs):
        self.runs, self.filters = runs, []

    def search_runs(self, ids, filter_string, max_results, page_token, order_by):
        self.filters.append(filter_string)
        out = [
            r
            for r in sorted(self.runs, key=lambda r: -r.info.start_time)
            if ("'FINISHED'" not in filter_string or r.info.status == "FINISHED")
            and (f"= '{r.data.tags['railsweep.cell_id']}'" in filter_string or "cell_id" not in filter_string)
        ]
        return _Page(out)


def _bare_run(run_id: str, status: str, tags: dict):
    from types import SimpleNamespace

    return SimpleNamespace(info=SimpleNamespace(run_id=run_id, status=status), data=SimpleNamespace(tags=tags))


def _run(cell_id: str, status: str, start: int):
    from types import SimpleNamespace

    tags = {"railsweep.cell_id": cell_id, "railsweep.kind": "cell"}
    return SimpleNamespace(
        info=SimpleNamespace(run_id=f"{cell_id}-{start}", status=status, start_time=start),
        data=SimpleNamespace(tags=tags),
    )


def test_the_newest_finished_run_of_a_cell_is_the_same_asked_alone_or_with_others():
    assert TAG_CELL_ID == "railsweep.cell_id"
    tracker = Tracker.__new__(Tracker)
    tracker.experiment_id = "1"
    tracker.client = _FakeClient(
        [_run("a", "FINISHED", 1), _run("a", "FINISHED", 5), _run("a", "RUNNING", 9), _run("b", "FINISHED", 2)]
    )
    together = tracker.finished_cells(["a", "b"])
    assert {c: r.info.run_id for c, r in together.items()} == {"a": "a-5", "b": "b-2"}
    assert tracker.finished_run("a") is together["a"]
    assert "= 'a'" in tracker.client.filters[-1]  # one cell: filtered on the server, not over every run
    assert tracker.finished_run("c") is None
    assert tracker.finished_cells().keys() == {"a", "b"}
