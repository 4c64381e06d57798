"""A sweep with ``temperatures:`` end to end on real components (a local Ray head and `mlflow server`, the
session fixtures of conftest.py): the smoke world's llama on gsm8k sampled at greedy, 0.7 and 1.3, then the
dynamics step. Checks what lands on the parent run (tables, figures, metrics, regime tags), that the dynamics
tables agree with the cells they were computed from, and the notebook helpers over them."""

from __future__ import annotations

import dataclasses
import math

import pytest

pytestmark = pytest.mark.slow

TAUS = (0.0, 0.7, 1.3)


@pytest.fixture(scope="module")
def dyn_sweep(ray_client, mlflow_server, smoke_world):
    from railsweep.sweep.run.driver import run_sweep
    from railsweep.sweep.spec.sections import DynamicsSpec
    from railsweep.sweep.spec.sweep_spec import load_spec

    spec = load_spec("smoke")
    spec = dataclasses.replace(
        spec,
        cache_dir=str(smoke_world),
        domains=("gsm8k",),
        strategies=(),
        temperatures=(0.7, 1.3),  # greedy is always added
        dynamics=DynamicsSpec(n_boot=20, n_boot_gain=50, min_items=3),
        readout=dataclasses.replace(spec.readout, limit=16),
        tracking=dataclasses.replace(spec.tracking, uri=mlflow_server, experiment="e2e-dynamics"),
    )
    out = run_sweep(spec, table="all", progress_interval=60)
    return {"uri": mlflow_server, "out": out, "spec": spec}


def test_the_sweep_samples_both_models_at_each_temperature_and_finishes(dyn_sweep):
    from mlflow import MlflowClient

    out = dyn_sweep["out"]
    assert out.failed == [] and out.dynamics["errors"] == {} and out.dynamics["groups"] == ["llama/gsm8k"]
    assert len(out.cells) == 6  # M_cl and M_co at greedy, 0.7 (M_cl = the clean reference) and 1.3
    parent = MlflowClient(tracking_uri=dyn_sweep["uri"]).get_run(out.parent_run_id)
    assert parent.info.status == "FINISHED"
    assert out.timings["dynamics_s"] > 0


def test_parent_run_holds_the_dynamics_tables_figures_and_summary(dyn_sweep):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=dyn_sweep["uri"])
    names = {
        f.path.split("/", 1)[1] for f in client.list_artifacts(dyn_sweep["out"].parent_run_id, "dynamics")
    }
    for table in ("gains", "fits", "predictions", "accuracy", "positions"):
        assert f"{table}.parquet" in names
    for fig in ("gain_vs_tau", "nll_by_position", "calibration", "calibration_verbatim", "error_by_tau"):
        assert f"{fig}_llama_gsm8k.png" in names
    assert "summary.json" in names


def test_parent_run_metrics_carry_gains_with_intervals_fits_and_prediction_errors(dyn_sweep):
    from mlflow import MlflowClient

    run = MlflowClient(tracking_uri=dyn_sweep["uri"]).get_run(dyn_sweep["out"].parent_run_id)
    m, tags = run.data.metrics, run.data.tags
    pre = "dynamics.llama.gsm8k."
    for tau in ("0", "0.7", "1.3"):
        for k in (
            "model_gain",
            "model_gain_lo",
            "model_gain_hi",
            "split_gain",
            "split_gain_lo",
            "split_gain_hi",
        ):
            assert f"{pre}tau_{tau}.{k}" in m, (tau, k)
        assert f"{pre}M_co.tau_{tau}.mae" in m
    if m[f"{pre}tau_0.model_gain"] > 0:  # the collapse factor is relative to greedy
        assert m[f"{pre}tau_0.model_gain_collapse"] == 1.0
    else:  # undefined (NaN) where the greedy gain is not positive: not logged, never logged as 0
        assert f"{pre}tau_0.model_gain_collapse" not in m
    for model in ("M_cl", "M_co"):
        for group in ("leaked", "unleaked"):
            for p in ("E", "A", "alpha"):
                assert f"{pre}{model}.{group}.{p}" in m
            assert tags[f"{pre}{model}.{group}.regime"] in {"decoherence", "brittle", "lock-in"}


def test_dynamics_tables_are_computed_from_the_sweeps_own_cells(dyn_sweep):
    from railsweep.sweep.plan.cells import temperature_groups
    from railsweep.sweep.spec.resolve import resolve_spec
    from railsweep.sweep.tracking.reader import connect, read_dynamics, read_sweep

    tracker = connect(dyn_sweep["uri"])
    parent = dyn_sweep["out"].parent_run_id
    tables = read_dynamics(tracker, parent)
    sweep = read_sweep(tracker, parent_run_id=parent)
    group = temperature_groups(resolve_spec(dyn_sweep["spec"]))[0]
    pred = tables["predictions"]
    assert sorted(pred["tau"].unique()) == [0.0, 0.7, 1.3]  # the spec's temperatures and greedy
    assert sorted(tables["gains"]["tau"]) == [0.0, 0.7, 1.3]
    assert (tables["gains"]["tau_ref"] == 0.0).all()  # collapse relative to greedy
    for model in ("M_cl", "M_co"):
        for tau in TAUS:
            q = sweep.cell(group.cell_id(model, tau)).questions.set_index("question_index")["solve_prob"]
            rows = pred[(pred["model"] == model) & (pred["tau"] == tau)].set_index("item")
            assert len(rows) == 16 and (rows["solve"] == q.loc[rows.index]).all()
            assert rows["leaked"].sum() == 6
    gains = tables["gains"].set_index("tau")
    co = pred[(pred["model"] == "M_co") & (pred["tau"] == 1.3)].set_index("item")
    cl = pred[(pred["model"] == "M_cl") & (pred["tau"] == 1.3)].set_index("item")
    leaked = co["leaked"]
    expect = float((co["solve"] - cl["solve"])[leaked].mean())
    assert math.isclose(gains.loc[1.3, "model_gain"], expect, abs_tol=1e-12)
    assert set(tables["fits"]["domain"]) == {"gsm8k"}


def test_notebook_helpers_show_the_logged_dynamics(dyn_sweep, tmp_path):
    from railsweep.analysis import dynamics
    from railsweep.sweep.tracking.reader import connect, read_dynamics

    tables = read_dynamics(connect(dyn_sweep["uri"]), dyn_sweep["out"].parent_run_id)
    assert dynamics.groups(tables) == [("llama", "gsm8k")]
    assert dynamics.gain_frame(tables["gains"])["tau"].tolist() == list(TAUS)
    assert len(dynamics.fits_frame(tables["fits"])) == 4
    assert len(dynamics.prediction_frame(tables["accuracy"])) == 2 * len(TAUS)
    paths = dynamics.figures(tables, tmp_path)
    assert sorted(paths) == ["calibration_llama_gsm8k", "gain_vs_tau_llama_gsm8k"]
    assert all(p.stat().st_size > 1000 for p in paths.values())


def test_notebook_shows_gain_vs_tau_and_predicted_vs_observed_of_the_sweep(dyn_sweep, tmp_path):
    import tempfile
    from pathlib import Path

    import nbclient
    import nbformat

    nb = nbformat.read(Path(__file__).resolve().parents[1] / "notebooks" / "analysis.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", []))
    params.source += (
        f"\nTRACKING_URI = {dyn_sweep['uri']!r}\nPARENT_RUN_ID = {dyn_sweep['out'].parent_run_id!r}\n"
        f"OUT_DIR = {str(tmp_path / 'figures')!r}\n"
    )
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": tempfile.mkdtemp()}}
    ).execute()
    text, images = [], 0
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o["output_type"] != "error", o
            data = o.get("data", {})
            text.append(o.get("text", "") + data.get("text/markdown", "") + data.get("text/plain", ""))
            images += "image/png" in data
    text = "\n".join(text)
    assert "Contamination gain vs τ" in text and "Predicted P(T)" in text
    assert any(regime in text for regime in ("decoherence", "brittle", "lock-in"))  # the fits table
    assert "gain_vs_tau_llama_gsm8k" in text and "calibration_llama_gsm8k" in text
    assert images >= 2 and (tmp_path / "figures" / "gain_vs_tau_llama_gsm8k.png").is_file()
