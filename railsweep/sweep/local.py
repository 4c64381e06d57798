"""Start or reuse a local Ray head and a local MLflow tracking server on 127.0.0.1, and submit jobs.

Both are started as separate processes (not inside the caller), so they
outlive a ``railsweep demo`` run and are reused by the next one. Token
authentication: Ray 2.60 turns it on for local clusters whenever
``~/.ray/auth_token`` exists, and ``ray job submit`` then fails with 401 unless
the client says so; every command here passes ``RAY_AUTH_MODE`` explicitly
(default ``disabled``, or whatever the caller's environment sets) to the head
and the client alike.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from railsweep.errors import ConfigError, MissingDependencyError


def auth_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("RAY_AUTH_MODE", "disabled")
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _exe(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise MissingDependencyError(name, purpose=f"the `{name}` command line")
    return found


def _wait(
    pred, timeout: float, what: str, proc: subprocess.Popen | None = None, log: Path | None = None
) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-2000:] if log and log.exists() else ""
            raise ConfigError(f"{what} exited with code {proc.returncode} before it was ready:\n{tail}")
        time.sleep(0.5)
    raise ConfigError(f"{what} was not ready after {timeout:.0f}s" + (f" (log: {log})" if log else ""))


@dataclass
class Service:
    url: str
    proc: subprocess.Popen | None  # None when an already running one was reused
    log: Path | None = None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop a service this process started (SIGTERM, then SIGKILL, to its own process group only)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = os.getpgid(self.proc.pid)
        os.killpg(pgid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)


def ensure_mlflow_server(run_dir: str | Path, *, port: int = 5000, timeout: float = 120.0) -> Service:
    """``mlflow server`` on 127.0.0.1:port (sqlite backend and served artifacts under ``run_dir``), reused if up."""
    url = f"http://127.0.0.1:{port}"
    if _http_ok(url + "/health"):
        return Service(url, None)
    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "mlflow-server.log"
    cmd = [
        _exe("mlflow"), "server", "--backend-store-uri", f"sqlite:///{run_dir / 'mlflow.db'}",
        "--artifacts-destination", str(run_dir / "mlartifacts"), "--host", "127.0.0.1", "--port", str(port),
        "--workers", "1",
    ]  # fmt: skip
    with open(log, "ab") as f:
        # MLflow's background job runner (huey consumers, ~0.25 GB each) serves no purpose for tracking.
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        proc = subprocess.Popen(
            cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True, cwd=run_dir, env=env
        )
    _wait(lambda: _http_ok(url + "/health"), timeout, f"mlflow server on {url}", proc, log)
    return Service(url, proc, log)


@dataclass
class RayHead:
    dashboard: str  # http://127.0.0.1:PORT — the job-submission address
    gcs: str | None
    service: Service


def ensure_ray_head(
    *,
    dashboard_port: int = 8265,
    num_cpus: int | None = None,
    num_gpus: int | None = None,
    block: bool = False,
    isolated: bool = False,
    timeout: float = 120.0,
) -> RayHead:
    """A local Ray head with its dashboard (needed by ``ray job submit``) on 127.0.0.1.

    Reused when a dashboard already answers on ``dashboard_port``. ``block=True``
    keeps ``ray start`` in the foreground as our child, so :meth:`Service.stop`
    ends exactly this cluster (``ray stop`` would end every Ray on the host).
    ``isolated=True`` picks free ports and a private temp dir (tests next to
    other clusters on the same machine).
    """
    url = f"http://127.0.0.1:{dashboard_port}"
    if not isolated and _http_ok(url + "/api/version"):
        return RayHead(url, None, Service(url, None))
    cmd = [_exe("ray"), "start", "--head", "--dashboard-host", "127.0.0.1", "--disable-usage-stats",
           "--include-dashboard", "true"]  # fmt: skip
    gcs_port = 6379
    log = None
    if isolated:
        gcs_port, dashboard_port = free_port(), free_port()
        url = f"http://127.0.0.1:{dashboard_port}"
        tmp = Path(f"/tmp/rsw{os.getpid()}-{gcs_port}")
        cmd += ["--temp-dir", str(tmp), "--ray-client-server-port", str(free_port()),
                "--dashboard-agent-listen-port", str(free_port())]  # fmt: skip
        log = Path(f"{tmp}.log")
    cmd += ["--port", str(gcs_port), "--dashboard-port", str(dashboard_port)]
    if num_cpus is not None:
        cmd += ["--num-cpus", str(num_cpus)]
    if num_gpus is not None:
        cmd += ["--num-gpus", str(num_gpus)]
    if block:
        cmd.append("--block")
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=auth_env(), start_new_session=True
        )
        if not block:
            proc.wait(timeout)
            if proc.returncode != 0:
                raise ConfigError(f"`{' '.join(cmd)}` failed with code {proc.returncode}")
        _wait(
            lambda: _http_ok(url + "/api/version"),
            timeout,
            "Ray head dashboard",
            proc if block else None,
            log,
        )
    finally:
        if log:
            out.close()
    return RayHead(url, f"127.0.0.1:{gcs_port}", Service(url, proc if block else None, log))


_NO_AGENT = "No available agent to submit job"


def submit_job(
    address: str,
    entrypoint: list[str],
    *,
    working_dir: str | Path,
    env_vars: dict[str, str] | None = None,
    submission_id: str | None = None,
    no_wait: bool = False,
    stream=None,
    agent_wait_s: float = 120.0,
) -> int:
    """``ray job submit`` (streams the job's logs unless ``no_wait``); returns the CLI's exit code."""
    import json

    cmd = [_exe("ray"), "job", "submit", "--address", address, "--working-dir", str(working_dir),
           "--runtime-env-json", json.dumps({"env_vars": env_vars or {}})]  # fmt: skip
    if submission_id:
        cmd += ["--submission-id", submission_id]
    if no_wait:
        cmd.append("--no-wait")
    cmd += ["--", *entrypoint]
    env = auth_env()
    for k in ("RAY_ADDRESS", "RAY_API_SERVER_ADDRESS"):  # these would override --address
        env.pop(k, None)
    # A head that has just started may not have its job agent yet ("No available agent to submit job"): the
    # submission was refused, nothing runs, so it is safe to try again for a while.
    deadline = time.monotonic() + agent_wait_s
    while True:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
        assert proc.stdout is not None
        refused = False
        for line in proc.stdout:
            refused = refused or _NO_AGENT in line
            (stream or sys.stdout).write(line)
        rc = proc.wait()
        if rc == 0 or not refused or time.monotonic() > deadline:
            return rc
        time.sleep(2.0)
