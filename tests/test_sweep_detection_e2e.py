"""A detection-only sweep end to end on real components (the session's local Ray head and `mlflow server`,
conftest.py): every detector on the smoke world, its readout cells decoded by the engine actors, the detection
step's artifacts and metrics on the parent run, and the table read back as the notebook reads it."""

from __future__ import annotations

import dataclasses
import io

import pytest

pytestmark = pytest.mark.slow

DETECTORS = ["ngram", {"name": "loss"}, "mink", "cdd", {"name": "perturb", "threshold": 0.2}]


def test_a_sweep_with_detectors_logs_the_truth_scored_table_on_its_parent_run(
    ray_client, mlflow_server, smoke_world, tmp_path
):
    import pandas as pd

    from railsweep.analysis.detection import roc_frame, truth_summary
    from railsweep.sweep.run.driver import run_sweep
    from railsweep.sweep.spec.sweep_spec import load_spec, spec_from_dict
    from railsweep.sweep.tracking import reader

    smoke = load_spec("smoke")
    spec = spec_from_dict(
        {"miniworld_preset": "smoke", "domains": ["gsm8k", "pq"], "detectors": DETECTORS,
         "readout": dataclasses.asdict(smoke.readout), "scoring": {"B": 4, "n_boot": 50, "seed": 0},
         "engine": dataclasses.asdict(smoke.engine), "resources": {"slots_per_engine": 2, "trial_cpus": 0.25},
         "tracking": {"uri": mlflow_server, "experiment": "e2e-detect"}},
        name="smoke_detect",
    )  # fmt: skip
    spec = dataclasses.replace(spec, cache_dir=str(smoke_world))
    printed = io.StringIO()
    out = run_sweep(spec, progress_interval=60, out=printed)

    # the readout cells: (gsm8k, pq) x (original, paraphrased) for llama, all finished; no paper tables
    assert len(out.cells) == 4 and not out.failed
    assert set(out.tables) == {"detection"}
    text = printed.getvalue()
    assert "Detection against the truth" in text and "| perturb | alpha=0.05 | llama | pq |" in text

    tracker = reader.connect(mlflow_server)
    client = tracker.client
    assert client.get_run(out.parent_run_id).info.status == "FINISHED"
    logged = {a.path for a in client.list_artifacts(out.parent_run_id, "detection")}
    assert logged == {f"detection/{n}" for n in ("detections.parquet", "truth.csv", "truth.md", "roc.png")}

    table = reader.read_detections(tracker, out.parent_run_id, tmp_path / "dl")
    n_test = 24  # the smoke world's test split; as many fresh control problems
    per_setting = table.groupby(["detector", "setting", "family", "domain"], dropna=False).size()
    assert (per_setting == 2 * n_test).all()
    assert sorted(per_setting.index.get_level_values("detector").unique()) == [
        "cdd",
        "loss",
        "mink",
        "ngram",
        "perturb",
    ]
    assert len(per_setting) == 2 + 4 * 2  # ngram per domain; every model-side detector per family x domain
    assert table[table.detector == "ngram"]["family"].isna().all()
    test = table[table.group == "test"]
    assert test["leaked"].notna().all() and test["leaked"].any() and not test["leaked"].all()
    # the readouts covered the first `limit` test questions: cdd and perturb score those, NaN elsewhere
    limit = smoke.readout.limit
    for det in ("cdd", "perturb"):
        rows = test[test.detector == det]
        assert rows[rows.item_id < limit]["score"].notna().all()
        assert rows[rows.item_id >= limit]["score"].isna().all()
    assert (table[table.detector == "perturb"]["threshold"] == 0.2).all()
    assert set(table[table.detector == "cdd"]["threshold_source"]) == {"default"}  # no control responses
    assert set(table[table.detector == "loss"]["threshold_source"]) == {"control"}

    # the notebook's recomputation equals the logged truth table; the ROC curves end at (1, 1)
    logged_truth = pd.read_csv(tracker.download(out.parent_run_id, "detection/truth.csv", tmp_path / "t"))
    again = truth_summary(table, n_boot=50, seed=0)
    assert len(again) == len(logged_truth) == 10
    pd.testing.assert_series_equal(
        again["auc"], logged_truth["auc"], check_names=False, check_exact=False, rtol=1e-12
    )
    roc = roc_frame(table)
    assert (roc.groupby(["detector", "setting", "family", "domain"], dropna=False)["tpr"].max() == 1).all()

    metrics = client.get_run(out.parent_run_id).data.metrics
    assert "detect.loss.reference_clean.llama.gsm8k.auc" in metrics
    assert "detect.ngram.n_13_fields_question_solution.corpus.pq.control_rate" in metrics
    assert metrics["time.detect_s"] > 0

    # the notebook's detection section shows the truth table and the ROC figure of this sweep
    import os
    import tempfile
    from pathlib import Path

    import nbclient
    import nbformat

    nb = nbformat.read(Path(__file__).resolve().parents[1] / "notebooks" / "analysis.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", []))
    params.source += (
        f"\nTRACKING_URI = {mlflow_server!r}\nEXPERIMENT = 'e2e-detect'\nPARENT_RUN_ID = {out.parent_run_id!r}\n"
        f"OUT_DIR = {str(tmp_path / 'nb')!r}\n"
    )
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": tempfile.mkdtemp()}}).execute()  # fmt: skip
    section = next(i for i, c in enumerate(nb.cells) if c.source.startswith("## Contamination detection"))
    outputs = nb.cells[section + 1].outputs
    assert not [o for o in outputs if o["output_type"] == "error"]
    shown = "".join(o.get("data", {}).get("text/markdown", "") for o in outputs)
    assert "| loss | reference=clean | llama | gsm8k |" in shown
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 1
    assert os.path.isfile(tmp_path / "nb" / "detection_roc.png")
    print("timings", out.timings)
