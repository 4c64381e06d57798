"""notebooks/analysis.ipynb and its library (railsweep.sweep.tracking.reader, railsweep.analysis.report) against a sweep
logged to a real local `mlflow server` in the exact layout of railsweep.sweep (parent run + sweep_spec.json, one
child run per cell tagged mlflow.parentRunId / railsweep.cell_id, per-question and responses Parquet under
results/, a mitigated cell's scores as metrics tagged with its clean run, and the tables the sweep's own publish
step logs on the parent).

The cells are written with the real results writer and the sweep's own Tracker, cell expansion, scoring and
publish step; only the per-question outcomes are drawn from a seeded generator instead of decoding a model, so
the fixture costs seconds (a real smoke sweep builds a miniature world first: minutes on 2 cores) while the
tables still have several strata and distinct values per strategy. The llama cells carry their trial's scores;
the pythia cells carry none (as when a trial's clean reference did not finish in time), so they are scored when
read back.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from railsweep.engines.base import Sample
from railsweep.errors import ConfigError, DataError
from railsweep.strategies.base import QuestionOutcome
from railsweep.tasks.base import Grade, Question

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "analysis.ipynb"
N_QUESTIONS, M = 60, 10
FAILED_LABEL = "RailCap n=2 ban"  # one cell is logged FAILED: it must be reported missing, not scored as 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def mlflow_uri(tmp_path_factory):
    """A real `mlflow server` on 127.0.0.1 (sqlite backend, served artifacts, one worker)."""
    root = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    exe = Path(sys.executable).with_name("mlflow")
    env = {**os.environ, "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true"}
    log = open(root / "server.log", "w")
    proc = subprocess.Popen(
        [str(exe), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
         "--backend-store-uri", f"sqlite:///{root}/mlflow.db", "--serve-artifacts",
         "--artifacts-destination", str(root / "artifacts")],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )  # fmt: skip
    uri = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    try:
        while True:
            try:
                with urllib.request.urlopen(uri + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(
                    f"mlflow server did not start: {(root / 'server.log').read_text()[-2000:]}"
                )
            time.sleep(0.5)
        yield uri
    finally:
        # the server's own process group (start_new_session): uvicorn and the job-runner children go with it
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def _task_dir(root: Path) -> Path:
    d = root / "task"
    d.mkdir()
    lines = [json.dumps({"question": f"Q{i}: {i} + 1?", "answer": f"{i} + 1 = {i + 1}\n#### {i + 1}"})
             for i in range(N_QUESTIONS)]  # fmt: skip
    (d / "test.jsonl").write_text("\n".join(lines) + "\n")
    (d / "cot_8shot.json").write_text("[]")
    return d


def _outcomes(cell, clean_c: np.ndarray, rng: np.random.Generator) -> list[QuestionOutcome]:
    """Per-question counts: the clean reference as drawn; a mitigated cell as a strategy-specific perturbation."""
    cfg = cell.config
    if cfg.role == "clean":
        c = clean_c
    elif cfg.strategy == "all_zero":
        c = np.zeros_like(clean_c)
    else:
        shift = {"identity": 4, "railcap": 1}.get(cfg.strategy, 2) + (cfg.strategy_params.get("n", 4) == 2)
        leaked = np.arange(N_QUESTIONS) % 2 == 0
        c = np.clip(clean_c + np.where(leaked, shift, 0) + rng.integers(-1, 2, N_QUESTIONS), 0, M)
    out = []
    for i, ci in enumerate(c):
        correct = [j < ci for j in rng.permutation(M)]
        grades = [Grade(bool(k), str(i + 1) if k else "0", "strict") for k in correct]
        samples = [Sample([1, 2], f"... The answer is {g.pred}.", "stop") for g in grades]
        out.append(QuestionOutcome(i, samples, grades, int(ci), M, int(correct[0])))
    return out


@pytest.fixture(scope="module")
def sweep_run(mlflow_uri, tmp_path_factory):
    """A two-family sweep (Table 3 gets two setting columns) logged like railsweep.sweep.run.driver + trial + publish do."""
    from railsweep.analysis.scoring import flatten_scores, score_pair, split_constants
    from railsweep.results.io import read_cell, write_cell
    from railsweep.sweep.plan.cells import expand
    from railsweep.sweep.run.sweep_run import cell_meta
    from railsweep.sweep.run.trial import cell_summary
    from railsweep.sweep.spec.sweep_spec import spec_from_dict
    from railsweep.sweep.tracking.publish import publish_sweep
    from railsweep.sweep.tracking.tracker import (
        TAG_CLEAN_RUN,
        TAG_QUESTIONS_FILE,
        TAG_RESPONSES_FILE,
        TAG_ROLE,
        Tracker,
    )

    root = tmp_path_factory.mktemp("sweep")
    task = _task_dir(root)
    adapters = {"clean": "a/clean", "co_gsm8k": "a/co_gsm8k", "co_pq": "a/co_pq"}
    spec = spec_from_dict({
        "name": "nbsmoke", "source": "paths", "data_dir": str(task), "domains": ["gsm8k"],
        "families": {"llama": {"base": "tiny/llama", "adapters": adapters},
                     "pythia": {"base": "tiny/pythia", "adapters": adapters}},
        "primary": {"family": "llama", "domain": "gsm8k"},
        "strategies": ["identity", "all_zero", {"name": "railcap", "grid": {"n": [2, 4], "mode": ["cap", "ban"]}}],
        "readout": {"m": M, "temperature": 0.7, "max_new_tokens": 32},
        "scoring": {"B": 10, "n_boot": 50, "seed": 0},
        "tracking": {"uri": mlflow_uri, "experiment": "nbsmoke"},
    })  # fmt: skip
    cells = expand(spec, "all")
    metas = [cell_meta(c) for c in cells]
    tracker = Tracker(mlflow_uri)
    exp_id = tracker.ensure_experiment("nbsmoke")
    parent, _ = tracker.parent_run(spec.sweep_id, run_name="nbsmoke-tableall", tags={}, resume=False)
    tracker.log(parent, params={"preset": "nbsmoke", "table": "all", "n_cells": len(cells)})
    spec_file = root / "sweep_spec.json"
    spec_file.write_text(json.dumps({"spec": spec.to_dict(), "cells": metas}, indent=1))
    tracker.log_artifact(parent, spec_file)

    questions = [Question(i, f"Q{i}", "", str(i + 1), leaked=i % 2 == 0) for i in range(N_QUESTIONS)]
    clean_c = {}
    for fam, seed in (("llama", 1), ("pythia", 2)):
        r = np.random.default_rng(seed)
        clean_c[fam] = np.minimum(r.binomial(M, r.beta(0.7, 0.9, N_QUESTIONS)), M)
    failed, runs, frames = [], {}, {}
    for cell, meta in zip(cells, metas):
        cfg = cell.config
        run = tracker.start_cell_run(parent, cell.cell_id, run_name=meta["run_name"],
                                     tags={TAG_ROLE: cfg.role, **meta["run_tags"]})  # fmt: skip
        if meta["label"] == FAILED_LABEL and cfg.family == "llama" and cfg.domain == "gsm8k":
            tracker.terminate(run, "FAILED")
            failed.append(cell.cell_id)
            continue
        rng = np.random.default_rng(int(cell.cell_id[:8], 16))
        paths = write_cell(
            root / "cells", cfg, _outcomes(cell, clean_c[cfg.family], rng), questions, provenance={}
        )
        df = frames[cell.cell_id] = read_cell(paths.questions)[1]
        metrics = cell_summary(df)
        tags = {TAG_QUESTIONS_FILE: paths.questions.name, TAG_RESPONSES_FILE: paths.responses.name}
        params = dict(meta["params"])
        if cell.clean_id and cfg.family == "llama":  # the trial's scores; pythia's trial logged none
            scores, design = split_constants(
                flatten_scores(score_pair(frames[cell.clean_id], df, B=10, n_boot=50, seed=0))
            )
            metrics.update(scores)
            params.update(design)
            tags[TAG_CLEAN_RUN] = runs[cell.clean_id]
        tracker.log(run, params=params, metrics=metrics, tags=tags)
        runs[cell.cell_id] = run
        tracker.log_artifact(run, paths.questions, "results")
        tracker.log_artifact(run, paths.responses, "results")
        tracker.terminate(run, "FINISHED")
    published = publish_sweep(mlflow_uri, parent)
    tracker.terminate(parent, "FINISHED")
    return {"uri": mlflow_uri, "parent": parent, "cells": cells, "failed": failed, "published": published,
            "exp": exp_id}  # fmt: skip


@pytest.fixture(scope="module")
def loaded(sweep_run):
    """The fixture sweep read back once by parent run id (tests that only analyse it share this)."""
    from railsweep.sweep.tracking import reader

    return reader.read_sweep(reader.connect(sweep_run["uri"]), parent_run_id=sweep_run["parent"])


def test_read_sweep_reads_every_finished_cell_of_the_newest_sweep(sweep_run):
    from railsweep.analysis import report
    from railsweep.sweep.tracking import reader

    tracker = reader.connect(sweep_run["uri"])
    sweep = reader.read_sweep(tracker, "nbsmoke")
    assert sweep.parent_run_id == sweep_run["parent"]
    assert sweep.primary == ("llama", "gsm8k")
    assert sweep.missing == sweep_run["failed"]
    finished = [c.cell_id for c in sweep_run["cells"] if c.cell_id not in sweep_run["failed"]]
    frames = {c.cell_id: c.questions for c in sweep.cells if c.finished}
    assert sorted(frames) == sorted(finished)
    assert all(len(df) == N_QUESTIONS and (df["m"] == M).all() for df in frames.values())
    clean_ids = {c.cell_id for c in sweep_run["cells"] if c.role == "clean"}
    responses = {c.cell_id for c in sweep.cells
                 if c.finished and c.role == "clean" and c.responses is not None}
    assert responses == clean_ids
    overview = report.cells_frame(sweep)
    assert (overview.set_index("cell_id").loc[sweep_run["failed"], "status"] == "missing").all()


def test_records_carry_the_trials_scores_and_the_clean_run_they_compare_against(loaded):
    llama = [c for c in loaded.cells if c.role == "mitigated" and c.finished and c.family == "llama"]
    pythia = [c for c in loaded.cells if c.role == "mitigated" and c.family == "pythia"]
    assert llama and all(c.scores is not None for c in llama)
    assert all(c.scored_against == loaded.cell(c.clean_id).run_id for c in llama)
    assert pythia and all(c.scores is None and c.scored_against is None for c in pythia)


def test_reused_trial_scores_equal_a_fresh_bootstrap_of_the_same_pair_bit_for_bit(loaded):
    """Scoring each pair once (in the trial) leaves every table number as a second bootstrap would make it."""
    import dataclasses

    from railsweep.analysis import report
    from railsweep.analysis.scoring import score_pair

    # llama's mitigated cells without their Parquet: scoring them can only reuse what the trials logged (the
    # clean reference keeps its table, from which the stratum occupancy beside SA-PPG is counted)
    no_tables = dataclasses.replace(
        loaded,
        cells=tuple(
            dataclasses.replace(c, load_questions=None, load_responses=None) if c.role == "mitigated" else c
            for c in loaded.cells
            if c.family == "llama"
        ),
    )
    reused = report.score_sweep(no_tables)
    assert reused and all(s["family"] == "llama" for s in reused)
    scored = report.score_sweep(loaded)
    assert {s["family"] for s in scored} == {"llama", "pythia"}
    by_id = {s["cell_id"]: s for s in scored}
    for s in reused:
        np.testing.assert_equal(by_id[s["cell_id"]], s)  # NaN (a withheld interval) equals NaN
    for s in scored:
        fresh = score_pair(loaded.cell(s["clean_id"]).questions, loaded.cell(s["cell_id"]).questions,
                           B=10, n_boot=50, seed=0)  # fmt: skip
        np.testing.assert_equal(s["score"], fresh, err_msg=s["strategy"])


def test_other_bootstrap_settings_score_again_instead_of_reusing_the_trials(loaded):
    from railsweep.analysis import report
    from railsweep.analysis.scoring import score_pair

    s = next(x for x in report.score_sweep(loaded, n_boot=40) if x["family"] == "llama")
    assert s["score"]["n_boot"] == 40
    fresh = score_pair(loaded.cell(s["clean_id"]).questions, loaded.cell(s["cell_id"]).questions,
                       B=10, n_boot=40, seed=0)  # fmt: skip
    assert s["score"] == fresh


def test_failed_cell_is_left_out_of_the_tables_not_scored_as_zero(sweep_run, loaded):
    from railsweep.analysis import report

    sweep = loaded
    scored = report.score_sweep(sweep)
    assert not {s["cell_id"] for s in scored} & set(sweep_run["failed"])
    t4 = report.paper_tables(scored, sweep.primary)["table4"]
    assert FAILED_LABEL not in t4.formatted.index
    assert "RailCap n=4 ban" in t4.formatted.index


def test_notebook_tables_equal_the_tables_the_sweep_published_on_its_parent_run(sweep_run, loaded, tmp_path):
    from railsweep.analysis import report
    from railsweep.analysis.table_writers import to_markdown
    from railsweep.sweep.tracking import reader

    tracker, sweep = reader.connect(sweep_run["uri"]), loaded
    tables = report.paper_tables(report.score_sweep(sweep), sweep.primary)
    assert set(tables) == {"table1", "table2", "table3", "table4"}
    for name in tables:
        logged = tracker.download(sweep_run["parent"], f"tables/{name}.md", tmp_path / name).read_text()
        assert to_markdown(tables[name]).strip() == logged.strip(), name
    assert list(tables["table3"].formatted.columns) == ["gsm8k × llama", "gsm8k × pythia"]
    assert sweep_run["published"]["missing"] == sweep_run["failed"]


def test_the_parent_run_carries_table_3_as_its_description_and_each_cells_sa_ppg_as_metrics(sweep_run, loaded):
    from railsweep.analysis import report
    from railsweep.sweep.tracking import reader

    parent = reader.connect(sweep_run["uri"]).client.get_run(sweep_run["parent"])
    note = parent.data.tags["mlflow.note.content"]
    assert note.startswith(sweep_run["published"]["markdown"]["table3"].strip()[:40]) and "Identity" in note
    scored = report.score_sweep(loaded)
    sappg = {k: v for k, v in parent.data.metrics.items() if k.startswith("sa_ppg/")}
    assert len(sappg) == len(scored) > 0
    ident = next(s for s in scored if s["strategy"] == "Identity" and s["family"] == "llama")
    assert sappg["sa_ppg/llama/gsm8k/Identity"] == ident["score"]["sa_ppg"]["value"]
    railcap = [k for k in parent.data.metrics if k.startswith("sa_ppg_vs_identity/llama/gsm8k/RailCap n_")]
    assert railcap and all("=" not in k for k in parent.data.metrics)


def test_all_zero_looks_better_on_a_ppg_than_on_sa_ppg_in_the_reading_guide(loaded):
    """The guide table backs the notebook's markdown: All-Zero's SA-PPG is the worst of the setting."""
    from railsweep.analysis import report

    sweep = loaded
    guide = report.gap_vs_sappg(report.score_sweep(sweep), sweep.primary).set_index("strategy")
    assert guide["SA-PPG"].idxmax() == "All-Zero"
    assert ((guide["cancelled share"] >= 0) & (guide["cancelled share"] <= 1)).all()


def test_figures_are_written_for_scatter_strata_bars_and_readout_stability(sweep_run, loaded, tmp_path):
    from railsweep.analysis import report
    from railsweep.sweep.tracking import reader

    sweep = loaded
    paths = report.figures(sweep, report.score_sweep(sweep), tmp_path)
    assert set(paths) == {
        "scatter_identity",
        "scatter_railcap",
        "stratum_deltas",
        "sappg_bars",
        "readout_stability",
    }
    for p in paths.values():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the sweep published the same figure set on its parent run
    client = reader.connect(sweep_run["uri"]).client
    logged = {a.path for a in client.list_artifacts(sweep_run["parent"], "figures")}
    assert logged == {f"figures/{name}.png" for name in paths}


def test_the_drill_down_lists_the_questions_behind_a_paired_a_ppg_difference(loaded):
    from railsweep.analysis import report

    scored = report.score_sweep(loaded)
    paired = report.paired_against_identity(loaded, scored)
    row = paired[(paired["strategy"] == "RailCap n=4 cap") & (paired["metric"] == "A-PPG")
                 & (paired["setting"] == report.setting_label(*loaded.primary))].iloc[0]  # fmt: skip
    changes = report.question_changes(loaded, scored, "RailCap n=4 cap")
    assert list(changes.columns) == report.CHANGE_COLUMNS and len(changes) == N_QUESTIONS
    assert -changes["gain"].mean() == pytest.approx(row["difference"], abs=1e-12)
    assert changes["gain"].is_monotonic_decreasing  # most gained first, most lost last
    with pytest.raises(DataError, match="RailCap n=9 cap.*Identity"):
        report.question_changes(loaded, scored, "RailCap n=9 cap")


def test_without_a_tracking_uri_the_demos_server_is_read_and_none_there_names_the_variable(monkeypatch, sweep_run):
    from railsweep.sweep.tracking import reader

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(reader, "DEMO_URI", sweep_run["uri"])  # the demo's server, on this test's port
    assert reader.connect(None).uri == sweep_run["uri"]
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setattr(reader, "DEMO_URI", nowhere)
    with pytest.raises(ConfigError, match="MLFLOW_TRACKING_URI") as e:
        reader.connect(None)
    assert nowhere in str(e.value) and "railsweep demo" in str(e.value)


def test_unknown_experiment_and_parent_run_are_data_errors(sweep_run):
    from railsweep.sweep.tracking import reader

    tracker = reader.connect(sweep_run["uri"])
    with pytest.raises(DataError, match="no-such-experiment"):
        reader.read_sweep(tracker, "no-such-experiment")
    with pytest.raises(DataError, match="0123456789abcdef"):
        reader.read_sweep(tracker, parent_run_id="0123456789abcdef0123456789abcdef")


def test_notebook_executes_against_the_server_and_shows_the_tables(sweep_run, tmp_path):
    import nbclient
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", []))
    params.source += f"\nEXPERIMENT = 'nbsmoke'\nOUT_DIR = {str(tmp_path / 'figures')!r}\n"
    env_before = os.environ.get("MLFLOW_TRACKING_URI")
    # the kernel inherits it: the notebook's default way to find the server
    os.environ["MLFLOW_TRACKING_URI"] = sweep_run["uri"]
    try:
        client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                         resources={"metadata": {"path": tempfile.mkdtemp()}})  # fmt: skip
        client.execute()
    finally:
        if env_before is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = env_before
    texts = []
    images = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            assert out["output_type"] != "error", out
            data = out.get("data", {})
            texts.append(out.get("text", "") + data.get("text/markdown", "") + data.get("text/plain", ""))
            images += "image/png" in data
    text = "\n".join(texts)
    for title in ("Table 1", "Table 2", "Table 3: SA-PPG across settings", "Table 4"):
        assert title in text, title
    assert "gsm8k × pythia |" in text  # Table 3's settings are its columns
    assert "SA-PPG" in text and "G-AP" in text
    assert "Paired differences against Identity" in text and "not distinguishable at this size" in text
    assert "RailCap n=4 cap vs Identity" in text and "gained" in text  # the per-question drill-down
    assert images == 5


def _mlflow_ui_bench():
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import mlflow_ui

    return mlflow_ui


def test_the_ui_bench_reads_through_rest_what_the_runs_table_shows(sweep_run):
    """bench/mlflow_ui.py's REST facts on the fixture sweep: cells + 1 runs, the experiment opens on the shared
    "Model training" view the printed address names, readable unique names, constants as params, and the compare
    view gets Identity beside RailCap of one setting."""
    from railsweep.sweep.tracking.mlflow_view import ui_address

    ui = _mlflow_ui_bench()
    f = ui.facts(sweep_run["uri"], "nbsmoke")
    assert (f["cells"], f["parents"]) == (len(sweep_run["cells"]), 1) and f["runs"] == f["cells"] + 1
    assert f["experiment_kind"] == "custom_model_development" and f["shared_view"]
    assert f["names_unique"] and f["filter_tags_on_every_cell"]
    assert f["constants_logged_as_metrics"] == []
    assert f["parent_description_chars"] > 0 and f["parent_summary_metrics"] > 0
    from mlflow import MlflowClient

    runs = MlflowClient(sweep_run["uri"]).search_runs([sweep_run["exp"]])
    setting, strategy = zip(*(next(r.info.run_name for r in runs if r.info.run_id == i).rsplit(" · ", 1)
                              for i in f["_ids"]["pair"]))  # fmt: skip
    assert setting[0] == setting[1] and strategy[0] == "Identity" and strategy[1].startswith("RailCap")
    pages = ui.pages(sweep_run["uri"], f)
    assert pages["runs_table"] == ui_address(sweep_run["uri"], sweep_run["exp"])
    assert set(pages) == {"runs_table", "compare", "parent_run"}


def test_the_ui_bench_refuses_a_folder_without_a_store_in_one_line(tmp_path, capsys):
    ui = _mlflow_ui_bench()
    assert ui.main(["--runs-dir", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nowhere" in err[0] and "mlflow.db" in err[0]
