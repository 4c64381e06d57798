"""notebooks/analysis.ipynb against a REAL smoke sweep: the miniature world decoded by the engine actors through
Ray Tune and logged to a local `mlflow server` (the session fixtures of conftest.py). The notebook must show the
same Table 3 that the sweep's aggregation logged on its parent run."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "analysis.ipynb"
pytestmark = pytest.mark.slow


def test_notebook_reproduces_the_tables_of_a_real_smoke_sweep(
    ray_client, mlflow_server, smoke_world, tmp_path
):
    import nbclient
    import nbformat
    from mlflow import MlflowClient

    from railsweep.sweep.run.driver import run_sweep
    from railsweep.sweep.spec.sweep_spec import load_spec

    exp = "nb-real-smoke"
    spec = load_spec("smoke")
    spec = dataclasses.replace(
        spec,
        cache_dir=str(smoke_world),
        tracking=dataclasses.replace(spec.tracking, uri=mlflow_server, experiment=exp),
    )
    out = run_sweep(spec, table="all", progress_interval=60)
    assert out.failed == []
    logged_table3 = Path(
        MlflowClient(tracking_uri=mlflow_server).download_artifacts(out.parent_run_id, "tables/table3.md")
    ).read_text()

    nb = nbformat.read(NOTEBOOK, as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", []))
    params.source += (
        f"\nTRACKING_URI = {mlflow_server!r}\nEXPERIMENT = {exp!r}\nPARENT_RUN_ID = {out.parent_run_id!r}\n"
        f"OUT_DIR = {str(tmp_path / 'figures')!r}\n"
    )
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": tempfile.mkdtemp()}}
    )
    client.execute()
    text = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            assert o["output_type"] != "error", o
            data = o.get("data", {})
            text.append(o.get("text", "") + data.get("text/markdown", "") + data.get("text/plain", ""))
    text = "\n".join(text)
    assert "Table 3" in text and "gsm8k × llama" in text and "RailCap n=4 cap" in text
    # every data row of the logged Table 3 appears verbatim in the notebook's plain-text copy
    rows = [line for line in logged_table3.splitlines() if line.startswith("| ") and "RailCap" in line]
    assert rows and all(row in text for row in rows), rows
    assert os.listdir(tmp_path / "figures")
