"""The distributed sweep end to end, on real components: a local Ray head (`ray start --head`, isolated
ports, our own process group) and `mlflow server` on 127.0.0.1, both once per session (fixtures in
conftest.py), running the `smoke` sweep on the smoke miniature world.

Each test logs to its own MLflow experiment, so cells are never skipped across tests.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import re
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from railsweep.services import jobs
from railsweep.sweep.run import faults

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _client(uri):
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def _runs(uri, experiment):
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(experiment_names=[experiment])


def _cell_runs(df):
    if "tags.railsweep.kind" not in df.columns:  # polled before the first run exists: no tag columns yet
        import pandas as pd

        return pd.DataFrame(columns=["status", "run_id", "tags.railsweep.cell_id"])
    return df[df["tags.railsweep.kind"] == "cell"]


def _smoke_spec(uri, experiment, cache, **resources):
    from railsweep.sweep.spec.sweep_spec import load_spec

    spec = load_spec("smoke")
    return dataclasses.replace(
        spec,
        cache_dir=str(cache),
        tracking=dataclasses.replace(spec.tracking, uri=uri, experiment=experiment),
        resources=dataclasses.replace(spec.resources, **resources),
    )


@pytest.fixture(scope="module")
def demo_log(ray_head, mlflow_server, smoke_world):
    """`railsweep demo --preset smoke` against the session's head and server, once: everything it printed,
    the streamed job log included."""
    from railsweep.cli import main

    dash_port, mlflow_port = ray_head.dashboard.rsplit(":", 1)[1], mlflow_server.rsplit(":", 1)[1]
    argv = ["demo", "--preset", "smoke", "--experiment", "e2e-job", "--cache-dir", str(smoke_world),
            "--dashboard-port", dash_port, "--mlflow-port", mlflow_port]  # fmt: skip
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        rc = main(argv)
    assert rc == 0, printed.getvalue()[-3000:]
    return printed.getvalue()


def test_demo_submits_the_smoke_sweep_as_a_ray_job_reusing_the_local_services(mlflow_server, demo_log):
    """`railsweep demo` finds the running head and server (reuse path) and runs `ray job submit`."""
    exp = "e2e-job"
    printed = demo_log
    assert "Table 3" in printed and "RailCap n=4 cap" in printed
    assert f"MLflow UI: {mlflow_server}/#/experiments/" in printed
    df = _runs(mlflow_server, exp)
    parents = df[df["tags.railsweep.kind"] == "sweep"]
    assert len(parents) == 1 and parents["status"].iloc[0] == "FINISHED"
    pid = parents["run_id"].iloc[0]
    cells = _cell_runs(df)
    assert (cells["tags.mlflow.parentRunId"] == pid).all()
    # table 3 of smoke: 1 clean + 2 domains × (identity, all_zero, railcap n=4 cap)
    assert len(cells) == 7 and cells["tags.railsweep.cell_id"].is_unique
    assert (cells["status"] == "FINISHED").all()
    assert len(df) == len(cells) + 1  # exactly the cells and the parent: no orphan run
    # what the MLflow UI shows: readable names, filterable tags, constants as params, the parent's summary
    assert cells["tags.mlflow.runName"].is_unique and "llama · clean reference" in set(cells["tags.mlflow.runName"])
    for tag in ("family", "domain", "strategy"):
        assert cells[f"tags.railsweep.{tag}"].notna().all(), tag
    assert not {"metrics.B", "metrics.n_boot", "metrics.alpha", "metrics.seed"} & set(df.columns)
    note = parents["tags.mlflow.note.content"].iloc[0]
    assert "SA-PPG" in note and "RailCap n=4 cap" in note
    assert any(c.startswith("metrics.sa_ppg/llama/gsm8k/") for c in df.columns)
    for col in ("params.strategy", "params.family", "params.domain", "params.m", "params.cell_id",
                "metrics.mean_solve_prob", "metrics.mean_r01", "tags.git.commit", "tags.pkg.torch"):  # fmt: skip
        assert cells[col].notna().all(), col
    mitigated = cells[cells["params.role"] == "mitigated"]
    # every mitigated cell logs SA-PPG with its noise floor and its interval's check (on the smoke world's few
    # questions the interval itself is withheld, and a withheld bound is not logged)
    for col in ("metrics.sa_ppg", "metrics.sa_ppg_floor", "metrics.sa_ppg_check", "metrics.a_ppg_floor"):
        assert mitigated[col].notna().all(), col
    assert (mitigated[mitigated["params.strategy"] == "all_zero"]["metrics.mean_solve_prob"] == 0).all()
    c = _client(mlflow_server)
    one = mitigated["run_id"].iloc[0]
    assert list(c.get_run(one).data.metrics)[:3] == ["sa_ppg", "a_ppg", "g_ap"]  # what the compare view charts
    assert {a.path for a in c.list_artifacts(one, "results")} >= {
        f"results/{mitigated['tags.railsweep.cell_id'].iloc[0]}.parquet",
        f"results/{mitigated['tags.railsweep.cell_id'].iloc[0]}.responses.parquet",
    }
    assert [a.path for a in c.list_artifacts(one, "plots")] == ["plots/clean_vs_mitigated.png"]
    tables = {a.path for a in c.list_artifacts(pid, "tables")}
    assert {"tables/table3.md", "tables/table3.csv", "tables/table3.html"} <= tables
    figures = {a.path for a in c.list_artifacts(pid, "figures")}
    assert {"figures/sappg_bars.png", "figures/readout_stability.png"} <= figures
    md = Path(c.download_artifacts(pid, "tables/table3.md")).read_text()
    assert "SA-PPG" in md and "gsm8k × llama" in md and "pq × llama" in md and "RailCap n=4 cap" in md


def test_a_clean_smoke_sweep_job_log_shows_no_traceback(demo_log):
    """Trial workers retired by Tune exit without Ray's SIGTERM handler printing "Exception ignored ...
    SystemExit: 1" (railsweep.sweep.run.trial.quiet_exit): a clean sweep's log reads as one."""
    assert "[sweep] done in" in demo_log and re.search(r"Job '[^']+' succeeded", demo_log)  # the job log, streamed
    for needle in ("Traceback", "Exception ignored", "SystemExit", "\x1b[", "Loading weights", "FutureWarning"):
        assert needle not in demo_log, demo_log[max(0, demo_log.find(needle) - 2000) :][:4000]


def test_the_demo_says_whether_its_world_holds_the_documented_weights(demo_log, smoke_world):
    from railsweep.miniworld import build_world
    from railsweep.miniworld.weights import documented_weights

    """The verdict line names the world built here and says the truth about it: whether this machine's build is
    the documented one is a measurement (CPUs of other kernels write other bits), the line must match it."""
    line = next(x for x in demo_log.splitlines() if "[sweep]" in x and "weights" in x)
    world = build_world("smoke", cache_dir=smoke_world)  # the cached one the demo ran on
    ours, theirs = world.weights["weights_digest"], documented_weights(world.manifest["digest"])["weights_digest"]
    if ours == theirs:
        assert f"[sweep] weights: documented (smoke {world.manifest['digest']}, weights {ours[:16]}" in line, line
    else:
        assert f"[sweep] warning: weights differ from the documented build ({ours[:16]} vs {theirs[:16]}" in line, line


def test_killing_the_engine_actor_after_the_first_cell_still_logs_every_cell_exactly_once(
    ray_client, mlflow_server, smoke_world
):
    """The progress board kills the engines (Ray restarts them) the moment the first cell is FINISHED, with
    eight cells queued or in flight: no race with the sweep, however loaded the machine."""
    from railsweep.sweep.run.driver import run_sweep

    exp = "e2e-kill-engine"
    spec = _smoke_spec(mlflow_server, exp, smoke_world, slots_per_engine=3)
    out = run_sweep(spec, table="all", progress_interval=60, fault=faults.Fault("kill-engine", after_cells=1))
    assert out.failed == []
    assert len(out.engine_stats) == 2  # smoke on 2 cores: one family, one engine per core
    served = sum(s["cells"] for s in out.engine_stats.values())
    assert served <= len(out.cells) - 1  # their counters reset: they restarted after serving a cell
    cells = _cell_runs(_runs(mlflow_server, exp))
    assert len(cells) == len(out.cells) == 9  # 1 clean + 2 domains × (identity, all_zero, railcap n=2, n=4)
    assert sorted(cells["tags.railsweep.cell_id"]) == sorted(out.cells)
    assert (cells["status"] == "FINISHED").all()


def test_killed_driver_resumes_without_recomputing_finished_cells(
    ray_head, mlflow_server, smoke_world, tmp_path
):
    """The progress board SIGKILLs the job's driver when the second cell is FINISHED; ``--resume`` then
    finishes the sweep, reusing the parent run and the finished cells' runs."""
    exp = "e2e-resume"
    env = {"MLFLOW_TRACKING_URI": mlflow_server, "RAILSWEEP_CACHE": str(smoke_world)}
    entry = [sys.executable, "sweeps/tables.py", "--table", "all", "--preset", "smoke", "--experiment", exp]
    crashed = io.StringIO()
    rc = jobs.submit_job(ray_head.dashboard, entry, working_dir=REPO, env_vars={**env, faults.ENV_VAR: "kill-driver:2"},
                          submission_id=f"resume-{int(time.time())}", stream=crashed)  # fmt: skip
    killed = re.search(r"failed with exit code (-9|137)\b", crashed.getvalue())  # the hook's SIGKILL
    assert rc != 0 and killed, crashed.getvalue()[-3000:]
    cells = _cell_runs(_runs(mlflow_server, exp))
    done = cells[cells["status"] == "FINISHED"]
    before = dict(zip(done["tags.railsweep.cell_id"], done["run_id"]))
    assert 2 <= len(before) < 9, "the driver must be killed mid-sweep"
    resumed = io.StringIO()
    assert jobs.submit_job(ray_head.dashboard, [*entry, "--resume"], working_dir=REPO, env_vars=env,
                            stream=resumed) == 0, resumed.getvalue()[-3000:]  # fmt: skip
    assert f"{len(before)} cell(s) already FINISHED in MLflow: not recomputed" in resumed.getvalue()
    assert "Traceback" not in resumed.getvalue() and "Exception ignored" not in resumed.getvalue()
    df = _runs(mlflow_server, exp)
    cells = _cell_runs(df)
    assert len(cells) == 9 and cells["tags.railsweep.cell_id"].is_unique  # nothing recomputed or duplicated
    assert (cells["status"] == "FINISHED").all()
    after = dict(zip(cells["tags.railsweep.cell_id"], cells["run_id"]))
    assert all(after[cid] == rid for cid, rid in before.items())  # finished cells kept their runs
    parents = df[df["tags.railsweep.kind"] == "sweep"]
    assert len(parents) == 1 and parents["status"].iloc[0] == "FINISHED"  # --resume reused the parent run


def test_a_sweep_on_a_world_not_yet_built_builds_it_beside_the_cells_and_tags_its_weights_after(
    ray_client, mlflow_server, tmp_path, capsys
):
    """A fresh cache: the driver builds the smoke world in a thread, starts the cells when its family is
    trained, and tags the parent and every cell run with the world's weights digest once the manifest exists."""
    from railsweep.miniworld.cache import world_root
    from railsweep.sweep.run.driver import run_sweep

    exp = "e2e-staged-world"
    printed = io.StringIO()
    out = run_sweep(_smoke_spec(mlflow_server, exp, tmp_path), table="3", progress_interval=60, out=printed)
    log = printed.getvalue()
    assert out.failed == [], log[-3000:]
    assert "is being built beside the sweep" in log, log[-3000:]
    manifest = json.loads((world_root("smoke", tmp_path) / "manifest.json").read_text())
    df = _runs(mlflow_server, exp)
    assert len(_cell_runs(df)) == 7 and len(df) == 7 + 1  # the staged first demo leaves no orphan run
    assert (df["status"] == "FINISHED").all()
    assert (df["tags.world.weights_digest"] == manifest["weights_digest"]).all()  # the parent and every cell
    parent = df[df["tags.railsweep.kind"] == "sweep"].iloc[0]
    phases = {c[len("metrics.time."):]: parent[c] for c in df.columns
              if c.startswith("metrics.time.") and pd.notna(parent[c])}  # a cell's own time.* are not the parent's
    assert {"setup_s", "world_wait_s", "trials_s", "publish_s", "other_s"} <= set(phases), phases
    assert all(v >= 0 for v in phases.values()), phases  # disjoint phases: none is the others' remainder
    assert sum(phases.values()) == pytest.approx(parent["metrics.wall_s"], rel=1e-6), phases
    cells = _cell_runs(df)
    assert "llama · clean reference" in set(cells["tags.mlflow.runName"])
    assert set(cells["tags.railsweep.strategy"]) >= {"Identity", "RailCap n=4 cap"}
    after = log.split("cells 7/7 done")[1]  # the verdict, once the build is over: documented or not, as measured
    assert "weights: documented" in after or "warning: weights differ from the documented build" in after, after
    console = capsys.readouterr().out  # what Tune itself printed: nothing that points away from the sweep's own lines
    assert "TensorBoard" not in console and "Configuration for experiment" not in console, console[-2000:]



def test_ctrl_c_stops_the_sweep_with_its_unfinished_runs_killed_and_says_how_to_resume(
    ray_head, mlflow_server, smoke_world
):
    """SIGINT to the job's driver (as Ctrl-C) after the second FINISHED cell: the sweep stops there, exit 130,
    instead of Tune returning as if the wave were done; no run stays RUNNING; the line says to --resume."""
    exp = "e2e-ctrl-c"
    env = {"MLFLOW_TRACKING_URI": mlflow_server, "RAILSWEEP_CACHE": str(smoke_world)}
    entry = [sys.executable, "sweeps/tables.py", "--table", "all", "--preset", "smoke", "--experiment", exp]
    log = io.StringIO()
    rc = jobs.submit_job(ray_head.dashboard, entry, working_dir=REPO,
                         env_vars={**env, faults.ENV_VAR: "interrupt-driver:2"}, stream=log)  # fmt: skip
    text = log.getvalue()
    assert rc != 0 and "[sweep] interrupted: the parent run and its unfinished cells are KILLED" in text, text[-3000:]
    assert "run the same command again with --resume" in text and "[sweep] done in" not in text, text[-3000:]
    df = _runs(mlflow_server, exp)
    parents, cells = df[df["tags.railsweep.kind"] == "sweep"], _cell_runs(df)
    assert list(parents["status"]) == ["KILLED"], parents["status"]
    assert set(cells["status"]) <= {"FINISHED", "KILLED"} and (cells["status"] == "FINISHED").sum() >= 2, cells
