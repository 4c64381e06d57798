"""The smoke sweep (Ray Tune + MLflow + the smoke miniature world) with the engine switched to vLLM, on CPU.

The miniature world is built (or found cached) by the default venv (its training code targets that venv's
transformers); the sweep itself runs in this venv, with engine actors holding a ``VLLMEngine``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from railsweep.sweep.spec.sweep_spec import PRESET_DIR

REPO = Path(__file__).resolve().parents[2]


def test_smoke_sweep_runs_every_cell_through_the_vllm_engine(tmp_path):
    from railsweep.services.mlflow_server import ensure_mlflow_server
    from railsweep.services.process import free_port

    main_py = os.environ.get("RAILSWEEP_MAIN_PYTHON") or str(REPO / ".venv" / "bin" / "python")
    if not Path(main_py).exists():
        pytest.fail(f"the default venv's python {main_py!r} (to build the miniature world) does not exist")
    cache = os.environ.get("RAILSWEEP_CACHE") or str(Path.home() / ".cache" / "railsweep")
    build = f"from railsweep.miniworld import build_world; build_world('smoke', cache_dir={cache!r})"
    subprocess.run([main_py, "-c", build], check=True, cwd=REPO)

    svc = ensure_mlflow_server(tmp_path / "mlflow", port=free_port())
    try:
        spec = yaml.safe_load((PRESET_DIR / "smoke.yaml").read_text())
        spec["engine"] = {"backend": "vllm", "device": "cpu"}
        spec["tracking"] = {"uri": svc.url, "experiment": "railsweep-smoke-vllm"}
        spec_path = tmp_path / "smoke_vllm.yaml"
        spec_path.write_text(yaml.safe_dump(spec))
        cmd = [sys.executable, str(REPO / "sweeps" / "tables.py"), "--table", "3", "--spec", str(spec_path)]
        cmd += ["--cache-dir", cache, "--num-cpus", "2"]
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # a fresh local Ray instance
        env["PYTHONPATH"] = str(REPO)
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1500)
    finally:
        if svc.proc is not None:
            svc.proc.terminate()
            svc.proc.wait(timeout=30)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Initializing a V1 LLM engine" in out  # the engine actors decoded with vLLM
    assert " 0 failed" in out and "RailCap" in out
