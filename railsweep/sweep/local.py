"""Start or reuse a local Ray head and a local MLflow tracking server on 127.0.0.1, and submit jobs.

Both are started as separate processes (not inside the caller), so they
outlive a ``railsweep demo`` run and are reused by the next one.

Security, in the order a head is started and used:

1. Token: Ray's own authentication token, in Ray's token file
   (``$RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``, mode 0600), made by
   ``ray get-auth-token --generate`` when missing (``$RAY_AUTH_TOKEN``, when set,
   is used as it is). railsweep never prints, logs or passes the token on a
   command line; Ray's processes read it from the file.
2. Head: ``RAY_AUTH_MODE=token`` on the head and on every client this module
   runs (``ray start``, ``ray job submit``) and in :func:`auth_env` for the
   caller's own. Every Ray port of the local head (GCS, raylet, object
   manager, dashboard, dashboard and runtime-env agents, client server,
   metrics) binds 127.0.0.1: ``ray start --node-ip-address 127.0.0.1`` alone is
   rewritten by Ray to the machine's address, so the head and its local clients
   run in Ray's single-machine mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``,
   the mode Ray uses on macOS and Windows), where the node address is loopback.
3. Reuse: a head already answering on the dashboard port is reused only if it
   refuses a request without the token and accepts ours; otherwise one
   :class:`ConfigError` names the head and says how to stop it (``ray stop``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from railsweep.errors import ConfigError, MissingDependencyError

# Ray's single-machine mode: the node address (and so every server of the head) is 127.0.0.1.
LOOPBACK_ONLY = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
# how long a local service may take to answer: on a loaded 2-core machine the MLflow server took over 120 s
START_TIMEOUT_S = 600.0


def ray_token_path() -> Path:
    """Where Ray looks for its token file: ``$RAY_AUTH_TOKEN_PATH``, else ``~/.ray/auth_token``."""
    return Path(os.environ.get("RAY_AUTH_TOKEN_PATH") or Path.home() / ".ray" / "auth_token").expanduser()


def ensure_ray_token() -> None:
    """Make sure Ray's token exists, readable by this user only; never reads it out loud.

    ``$RAY_AUTH_TOKEN`` set: nothing to do. The default file is created by Ray's
    own ``ray get-auth-token --generate`` (its output, which is the token,
    discarded) under umask 077; a file named by ``$RAY_AUTH_TOKEN_PATH`` (which
    Ray's generator does not write) gets a token of the same form (256 random
    bits, hex). An existing file that others can read is narrowed to 0600.
    """
    if os.environ.get("RAY_AUTH_TOKEN"):
        return
    path = ray_token_path()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if "RAY_AUTH_TOKEN_PATH" in os.environ:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
        else:
            subprocess.run([_exe("ray"), "get-auth-token", "--generate"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False, umask=0o077, env=auth_env())  # fmt: skip
        if not path.exists():
            raise ConfigError(f"could not create Ray's authentication token file {path}")
    if path.stat().st_mode & 0o077:
        path.chmod(0o600)


def auth_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a Ray process on this machine: token authentication on, loopback-only node.

    ``RAY_AUTH_MODE`` is always ``token`` (a caller's ``disabled`` is overridden):
    with authentication off, anyone who reaches the Jobs API or the GCS runs code.
    """
    env = dict(os.environ if base is None else base)
    env["RAY_AUTH_MODE"] = "token"
    env.update(LOOPBACK_ONLY)
    return env


def ray_init_kwargs(
    address: str | None, *, num_cpus: int | None = None, num_gpus: int | None = None
) -> dict[str, object]:
    """Keyword arguments for ``ray.init`` in the sweep job (:mod:`railsweep.sweep.job`); call it before ``import ray``.

    1. A cluster to join (``address``, else ``$RAY_ADDRESS``, which Ray sets
       inside a job): join it with token authentication (in Ray's single-machine
       mode when the address is 127.0.0.1). The cluster has its own
       resources, so ``num_cpus``/``num_gpus`` (which Ray refuses when joining) are
       dropped with a note on stderr.
    2. Otherwise a fresh private instance (``address="local"``: never the head
       that another process left running), token authentication on, every port
       on 127.0.0.1, sized by ``num_cpus``/``num_gpus``.
    """
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        os.environ.setdefault("RAY_AUTH_MODE", "token")
        if address.split("://")[-1].rsplit(":", 1)[0] in ("127.0.0.1", "localhost"):
            os.environ.update(LOOPBACK_ONLY)  # else Ray rewrites 127.0.0.1 to this machine's address
        dropped = [flag for flag, v in (("--num-cpus", num_cpus), ("--num-gpus", num_gpus)) if v is not None]
        if dropped:
            print(f"[railsweep] joining the Ray cluster at {address}: {' and '.join(dropped)} ignored "
                  "(they size a new local instance; a running cluster has its own resources)",
                  file=sys.stderr, flush=True)  # fmt: skip
        return {"address": address}
    os.environ.update(auth_env({}))
    ensure_ray_token()
    kwargs: dict[str, object] = {"address": "local"}
    if num_cpus is not None:
        kwargs["num_cpus"] = num_cpus
    if num_gpus is not None:
        kwargs["num_gpus"] = num_gpus
    return kwargs


def _bearer() -> dict[str, str]:
    """The Authorization header Ray's dashboard expects (built in memory, never printed)."""
    token = os.environ.get("RAY_AUTH_TOKEN")
    if not token:
        path = ray_token_path()
        token = path.read_text().strip() if path.exists() else ""
    return {"Authorization": f"Bearer {token}"} if token else {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_or_free(port: int) -> int:
    """``port`` when nothing listens on it on 127.0.0.1 (nor on all interfaces), else a free port."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return free_port()
    return port


def _http_status(url: str, headers: dict[str, str] | None = None, timeout: float = 2.0) -> int | None:
    """The HTTP status of a GET (None when nothing answers)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


def _http_ok(url: str, timeout: float = 2.0, headers: dict[str, str] | None = None) -> bool:
    return _http_status(url, headers, timeout) == 200


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
    if proc is not None:  # never leave behind a service nobody will use or stop
        Service("", proc).stop()
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


def ensure_mlflow_server(run_dir: str | Path, *, port: int = 5000, timeout: float = START_TIMEOUT_S) -> Service:
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


def check_head_accepts_token(url: str) -> None:
    """A running head may be reused only if it refuses anonymous requests and accepts this machine's token.

    Raises one :class:`ConfigError` naming the head and how to stop it otherwise.
    """
    stop = "stop it with `ray stop` (this ends every Ray process of this user on the machine) and run again"
    anonymous = _http_status(url + "/api/jobs/")
    if anonymous == 200:
        raise ConfigError(
            f"the Ray head at {url} runs without token authentication (its Jobs API answers without a token, "
            f"so anyone who can reach it can run code); {stop}"
        )
    if anonymous not in (401, 403):
        raise ConfigError(
            f"{url} answers but is not a Ray dashboard (GET /api/jobs/ gave {anonymous}); "
            "choose another port with --dashboard-port"
        )
    mine = _http_status(url + "/api/jobs/", _bearer())
    if mine != 200:
        where = "$RAY_AUTH_TOKEN" if os.environ.get("RAY_AUTH_TOKEN") else str(ray_token_path())
        raise ConfigError(
            f"the Ray head at {url} does not accept this machine's Ray token ({where}; it answered {mine}): it "
            f"was started with another token. Point RAY_AUTH_TOKEN_PATH at that head's token file, or {stop}"
        )


def head_interpreters(dashboard_port: int, proc: Path = Path("/proc")) -> list[str]:
    """The Python interpreters of the local Ray dashboards started with ``--port=<dashboard_port>`` (from
    their command lines under ``proc``); [] where that cannot be read (no procfs)."""
    found = []
    for cmdline in proc.glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:  # the process ended, or is not ours to read
            continue
        args = [a.decode(errors="replace") for a in argv if a]
        if len(args) > 1 and args[1].endswith("dashboard/dashboard.py") and f"--port={dashboard_port}" in args:
            found.append(args[0])
    return found


def check_head_environment(dashboard_port: int, proc: Path = Path("/proc")) -> None:
    """A running local head may be reused only if it runs in this Python environment: its workers run its
    interpreter, so a head started from another virtual environment (another checkout) would run that
    environment's railsweep in every actor and trial. Raises one :class:`ConfigError` naming both."""
    heads = head_interpreters(dashboard_port, proc)
    mine = Path(sys.prefix).resolve()
    if heads and not any(Path(h).parent.parent.resolve() == mine for h in heads):
        raise ConfigError(
            f"the Ray head on 127.0.0.1:{dashboard_port} runs {heads[0]}, not this environment ({mine}): its "
            "workers would run that environment's railsweep. Stop it with `ray stop` (this ends every Ray "
            "process of this user on the machine), or start another head with --dashboard-port"
        )


def ensure_ray_head(
    *,
    dashboard_port: int = 8265,
    num_cpus: int | None = None,
    num_gpus: int | None = None,
    block: bool = False,
    isolated: bool = False,
    timeout: float = START_TIMEOUT_S,
) -> RayHead:
    """A local Ray head with token authentication, every port on 127.0.0.1, its dashboard (the job API) too.

    Reused when a dashboard already answers on ``dashboard_port`` and
    :func:`check_head_accepts_token` and :func:`check_head_environment` pass.
    ``block=True`` keeps ``ray start`` in the foreground as our child, so :meth:`Service.stop` ends exactly this
    cluster (``ray stop`` would end every Ray on the host). ``isolated=True``
    picks free ports and a private temp dir (tests next to other clusters on
    the same machine) and never reuses a running head.
    """
    url = f"http://127.0.0.1:{dashboard_port}"
    ensure_ray_token()
    if not isolated and _http_status(url + "/api/version") is not None:
        check_head_accepts_token(url)
        check_head_environment(dashboard_port)
        return RayHead(url, None, Service(url, None))
    cmd = [_exe("ray"), "start", "--head", "--node-ip-address", "127.0.0.1", "--dashboard-host", "127.0.0.1",
           "--disable-usage-stats", "--include-dashboard", "true"]  # fmt: skip
    # every agent port named: with port 0 the raylet waits for the agents to write theirs to a file and
    # gives up ("Timed out waiting for file .../metrics_agent_port") when a loaded machine starts them slowly
    cmd += ["--dashboard-agent-grpc-port", str(free_port()), "--runtime-env-agent-port", str(free_port()),
            "--metrics-export-port", str(free_port())]  # fmt: skip
    if isolated:
        gcs_port, dashboard_port = free_port(), free_port()
        client_port, agent_port = free_port(), free_port()
        url = f"http://127.0.0.1:{dashboard_port}"
        tmp = Path(f"/tmp/rsw{os.getpid()}-{gcs_port}")
        cmd += ["--temp-dir", str(tmp)]
        log = Path(f"{tmp}.log")
    else:
        log = Path(tempfile.gettempdir()) / f"railsweep-ray-start-{os.getpid()}.log"
        # Ray's default ports, unless something on this machine holds them (a second head beside a running one,
        # on another dashboard port, must not collide on the GCS, client or agent port)
        gcs_port, client_port, agent_port = port_or_free(6379), port_or_free(10001), port_or_free(52365)
    cmd += ["--ray-client-server-port", str(client_port), "--dashboard-agent-listen-port", str(agent_port)]
    cmd += ["--port", str(gcs_port), "--dashboard-port", str(dashboard_port)]
    if num_cpus is not None:
        cmd += ["--num-cpus", str(num_cpus)]
    if num_gpus is not None:
        cmd += ["--num-gpus", str(num_gpus)]
    if block:
        cmd.append("--block")
    out = open(log, "ab")
    try:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=auth_env(), start_new_session=True
        )
        if not block:
            proc.wait(timeout)
            if proc.returncode != 0:
                tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
                raise ConfigError(f"`{' '.join(cmd)}` failed with code {proc.returncode} (log: {log}):\n{tail}")
        _wait(
            lambda: _http_ok(url + "/api/version", headers=_bearer()),
            timeout,
            "Ray head dashboard",
            proc if block else None,
            log,
        )
    finally:
        out.close()
    return RayHead(url, f"127.0.0.1:{gcs_port}", Service(url, proc if block else None, log))


_NO_AGENT = "No available agent to submit job"


def submit_job(
    address: str,
    entrypoint: list[str],
    *,
    working_dir: str | Path | None = None,
    env_vars: dict[str, str] | None = None,
    submission_id: str | None = None,
    no_wait: bool = False,
    stream=None,
    agent_wait_s: float = 120.0,
) -> int:
    """``ray job submit`` (streams the job's logs unless ``no_wait``); returns the CLI's exit code.

    ``working_dir`` is uploaded for the job to run in; None uploads nothing (the job runs installed code)."""
    import json

    cmd = [_exe("ray"), "job", "submit", "--address", address,
           "--runtime-env-json", json.dumps({"env_vars": env_vars or {}})]  # fmt: skip
    if working_dir is not None:
        cmd += ["--working-dir", str(working_dir)]
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
