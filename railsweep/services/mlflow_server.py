"""Start or reuse a local MLflow tracking server on 127.0.0.1 (sqlite backend, served artifacts)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from railsweep.services.process import START_TIMEOUT_S, Service, exe, http_ok, wait_until

PID_FILE = "mlflow-server.pid"  # in the run folder: the process (and group) id of the server started there


def ensure_mlflow_server(run_dir: str | Path, *, port: int = 5000,
                         timeout: float = START_TIMEOUT_S) -> Service:  # fmt: skip
    """``mlflow server`` on 127.0.0.1:port (sqlite backend and served artifacts under ``run_dir``), reused if up."""
    url = f"http://127.0.0.1:{port}"
    if http_ok(url + "/health"):
        return Service(url, None)
    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "mlflow-server.log"
    cmd = [
        exe("mlflow"), "server", "--backend-store-uri", f"sqlite:///{run_dir / 'mlflow.db'}",
        "--artifacts-destination", str(run_dir / "mlartifacts"), "--host", "127.0.0.1", "--port", str(port),
        "--workers", "1",
    ]  # fmt: skip
    with open(log, "ab") as f:
        # MLflow's background job runner (huey consumers, ~0.25 GB each) serves no purpose for tracking.
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, cwd=run_dir,
                                env=env)  # fmt: skip
    wait_until(lambda: http_ok(url + "/health"), timeout, f"mlflow server on {url}", proc, log)
    # the server leads its own process group: `kill -- -$(cat RUN_DIR/mlflow-server.pid)` ends it and its workers
    (run_dir / PID_FILE).write_text(f"{proc.pid}\n", encoding="utf-8")
    return Service(url, proc, log)


def started_server(run_dir: str | Path) -> Path | None:
    """The pid file of the MLflow server started over ``run_dir`` while the process it names is an ``mlflow
    server`` over ``run_dir`` (read from /proc; None elsewhere): a stale file's pid may be another's now."""
    pid_file = Path(run_dir).resolve() / PID_FILE
    try:
        cmdline = Path(f"/proc/{int(pid_file.read_text())}/cmdline").read_bytes().split(b"\0")
    except (OSError, ValueError):
        return None
    ours = b"server" in cmdline and any(str(pid_file.parent).encode() in arg for arg in cmdline)
    return pid_file if ours and any(arg.endswith(b"mlflow") for arg in cmdline) else None
