"""The processes behind the local services: free ports, HTTP probes, waiting for readiness, stopping (a
started service has its own process group, so :meth:`Service.stop` ends it and its children only).
"""

from __future__ import annotations

import contextlib
import json
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

# how long a local service may take to answer: on a loaded 2-core machine the MLflow server took over 120 s
START_TIMEOUT_S = 600.0


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


def http_status(url: str, headers: dict[str, str] | None = None, timeout: float = 2.0) -> int | None:
    """The HTTP status of a GET (None when nothing answers)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


def http_json(url: str, headers: dict[str, str] | None = None, timeout: float = 10.0):
    """The JSON body of a GET that answers 200 (None otherwise)."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as r:
            return json.loads(r.read()) if r.status == 200 else None
    except (urllib.error.URLError, OSError, ValueError):
        return None


def http_ok(url: str, timeout: float = 2.0, headers: dict[str, str] | None = None) -> bool:
    return http_status(url, headers, timeout) == 200


def exe(name: str) -> str:
    """The ``name`` command of this interpreter's environment (else of ``$PATH``)."""
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if not found:
        raise MissingDependencyError(name, purpose=f"the `{name}` command line")
    return found


def wait_until(pred, timeout: float, what: str, proc: subprocess.Popen | None = None,
               log: Path | None = None) -> None:  # fmt: skip
    """Poll ``pred`` until it holds; a ``proc`` exiting first, or the timeout (``proc`` stopped), raises."""
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
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        self.proc.wait(10)
