"""Start or reuse a local Ray head: token authentication, every port on 127.0.0.1, the dashboard (job API) too.
A running head is reused only after :func:`check_head_accepts_token` and :func:`check_head_environment`.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from railsweep.errors import ConfigError
from railsweep.services import process
from railsweep.services.tokens import auth_env, bearer, ensure_ray_token, ray_token_path

_STOP = "stop it with `ray stop` (this ends every Ray process of this user on the machine) and run again"


@dataclass
class RayHead:
    dashboard: str  # http://127.0.0.1:PORT — the job-submission address
    gcs: str | None
    service: process.Service


def check_head_accepts_token(url: str) -> None:
    """A running head may be reused only if it refuses anonymous requests and accepts this machine's token."""
    anonymous = process.http_status(url + "/api/jobs/")
    if anonymous == 200:
        raise ConfigError(f"the Ray head at {url} runs without token authentication (its Jobs API answers "
                          f"without a token, so anyone who can reach it can run code); {_STOP}")  # fmt: skip
    if anonymous not in (401, 403):
        raise ConfigError(f"{url} answers but is not a Ray dashboard (GET /api/jobs/ gave {anonymous}); "
                          "choose another port with --dashboard-port")
    mine = process.http_status(url + "/api/jobs/", bearer())
    if mine != 200:
        where = "$RAY_AUTH_TOKEN" if os.environ.get("RAY_AUTH_TOKEN") else str(ray_token_path())
        raise ConfigError(f"the Ray head at {url} does not accept this machine's Ray token ({where}; it "
                          f"answered {mine}): it was started with another token. Point RAY_AUTH_TOKEN_PATH "
                          f"at that head's token file, or {_STOP}")  # fmt: skip


def head_interpreters(dashboard_port: int, proc: Path = Path("/proc")) -> list[str]:
    """The Python interpreters of the local Ray dashboards on ``dashboard_port`` ([] without procfs)."""
    found = []
    for cmdline in proc.glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:  # the process ended, or is not ours to read
            continue
        args = [a.decode(errors="replace") for a in argv if a]
        if (len(args) > 1 and args[1].endswith("dashboard/dashboard.py")
                and f"--port={dashboard_port}" in args):
            found.append(args[0])
    return found


def check_head_environment(dashboard_port: int, proc: Path = Path("/proc")) -> None:
    """A running local head may be reused only if it runs this Python environment: its workers run its
    interpreter, so a head from another virtual environment would run that environment's railsweep."""
    heads = head_interpreters(dashboard_port, proc)
    mine = Path(sys.prefix).resolve()
    if heads and not any(Path(h).parent.parent.resolve() == mine for h in heads):
        raise ConfigError(f"the Ray head on 127.0.0.1:{dashboard_port} runs {heads[0]}, not this environment "
                          f"({mine}): its workers would run that environment's railsweep. Stop it with `ray "
                          "stop` (this ends every Ray process of this user on the machine), or start another "
                          "head with --dashboard-port")  # fmt: skip


def _start_command(dashboard_port: int, num_cpus: int | None, num_gpus: int | None, block: bool,
                   isolated: bool) -> tuple[list[str], int, int, Path]:  # fmt: skip
    """``ray start --head ...`` with every port named; returns (command, GCS port, dashboard port, log)."""
    cmd = [process.exe("ray"), "start", "--head", "--node-ip-address", "127.0.0.1", "--dashboard-host",
           "127.0.0.1", "--disable-usage-stats", "--include-dashboard", "true"]  # fmt: skip
    # every agent port named: with port 0 the raylet waits for the agents to write theirs to a file and
    # gives up ("Timed out waiting for file .../metrics_agent_port") when a loaded machine starts them slowly
    free = process.free_port
    cmd += ["--dashboard-agent-grpc-port", str(free()), "--runtime-env-agent-port", str(free()),
            "--metrics-export-port", str(free())]  # fmt: skip
    if isolated:
        gcs_port, dashboard_port = free(), free()
        client_port, agent_port = free(), free()
        tmp = Path(f"/tmp/rsw{os.getpid()}-{gcs_port}")
        cmd += ["--temp-dir", str(tmp)]
        log = Path(f"{tmp}.log")
    else:
        log = Path(tempfile.gettempdir()) / f"railsweep-ray-start-{os.getpid()}.log"
        # Ray's default ports, unless something on this machine holds them (a second head beside a running one,
        # on another dashboard port, must not collide on the GCS, client or agent port)
        gcs_port, client_port, agent_port = (process.port_or_free(p) for p in (6379, 10001, 52365))
    cmd += ["--ray-client-server-port", str(client_port), "--dashboard-agent-listen-port", str(agent_port)]
    cmd += ["--port", str(gcs_port), "--dashboard-port", str(dashboard_port)]
    if num_cpus is not None:
        cmd += ["--num-cpus", str(num_cpus)]
    if num_gpus is not None:
        cmd += ["--num-gpus", str(num_gpus)]
    if block:
        cmd.append("--block")
    return cmd, gcs_port, dashboard_port, log


def ensure_ray_head(*, dashboard_port: int = 8265, num_cpus: int | None = None, num_gpus: int | None = None,
                    block: bool = False, isolated: bool = False,
                    timeout: float = process.START_TIMEOUT_S) -> RayHead:  # fmt: skip
    """A local Ray head, reused when a dashboard already answers on ``dashboard_port``. ``block=True`` keeps
    ``ray start`` in the foreground as our child, so :meth:`Service.stop` ends exactly this cluster (``ray
    stop`` would end every Ray on the host). ``isolated=True``: free ports, a private temp dir, no reuse."""
    url = f"http://127.0.0.1:{dashboard_port}"
    ensure_ray_token()
    if not isolated and process.http_status(url + "/api/version") is not None:
        check_head_accepts_token(url)
        check_head_environment(dashboard_port)
        return RayHead(url, None, process.Service(url, None))
    for attempt in range(1, START_ATTEMPTS + 1):
        cmd, gcs_port, port, log = _start_command(dashboard_port, num_cpus, num_gpus, block, isolated)
        try:
            proc = _start(cmd, log, f"http://127.0.0.1:{port}", block, timeout)
            break
        except _StartFailed as e:
            if attempt == START_ATTEMPTS:
                raise ConfigError(str(e)) from None
            print(f"[railsweep] {e}\n[railsweep] ray start: trying once more", file=sys.stderr, flush=True)
    url = f"http://127.0.0.1:{port}"
    return RayHead(url, f"127.0.0.1:{gcs_port}", process.Service(url, proc if block else None, log))


# `ray start` fails now and then on a loaded machine inside Ray itself (its dashboard's API server gives up
# starting): a second try, after the first one's processes are ended, has always come up
START_ATTEMPTS = 2


class _StartFailed(Exception):
    pass


def _start(cmd: list[str], log: Path, url: str, block: bool, timeout: float) -> subprocess.Popen:
    """Run ``ray start`` and wait for the dashboard; a failed start (a blocking one exiting at all) ends what
    it left running and raises :class:`_StartFailed`. A blocking start is ready only once it prints "Ray
    runtime started.": the dashboard answers before the raylet registers, and the raylet still gives up when
    its agents are slow to start (a fixed 15 s wait inside Ray)."""
    offset = log.stat().st_size if log.exists() else 0
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=auth_env(),
                                start_new_session=True)  # fmt: skip
    failed = _exited_before_started(proc, log, offset, timeout) if block else proc.wait(timeout) != 0
    if failed:
        end_failed_start(proc.pid)
        tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
        raise _StartFailed(f"`{' '.join(cmd)}` failed with code {proc.returncode} (log: {log}):\n{tail}")
    process.wait_until(lambda: process.http_ok(url + "/api/version", headers=bearer()), timeout,
                       "Ray head dashboard", proc if block else None, log)  # fmt: skip
    return proc


_STARTED = b"Ray runtime started."


def _exited_before_started(proc: subprocess.Popen, log: Path, offset: int, timeout: float) -> bool:
    """False once "Ray runtime started." is in ``log`` after ``offset``, True when the start exits first."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            return True
        with open(log, "rb") as f:
            f.seek(offset)
            if _STARTED in f.read():
                return False
        time.sleep(0.5)
    process.Service("", proc).stop()
    raise ConfigError(f"`ray start` had not started after {timeout:.0f}s (log: {log})")


SESSION_SCANS = 3  # looks for a failed start's session processes, 0.2 s apart


def end_failed_start(pid: int, proc_dir: Path = Path("/proc")) -> list[int]:
    """SIGKILL what a failed ``ray start`` (process ``pid``) left running: its process group and any process
    of its Ray session (``session_<date>_<time>_<pid>``) that left the group; returns the latter's ids."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    mark = re.compile(rf"session_[0-9_-]+_{pid}\b".encode())
    hit: list[int] = []
    for attempt in range(SESSION_SCANS):  # a process in the middle of exec shows an empty cmdline for a moment
        if attempt:
            time.sleep(0.2)
        hit += [p for p in _session_processes(mark, proc_dir) if p not in hit]
    return hit


def _session_processes(mark: re.Pattern, proc_dir: Path) -> list[int]:
    """SIGKILL every process whose command line matches ``mark``; their ids."""
    hit = []
    for entry in proc_dir.glob("[0-9]*"):
        try:
            if mark.search((entry / "cmdline").read_bytes()):
                os.kill(int(entry.name), signal.SIGKILL)
                hit.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return hit
