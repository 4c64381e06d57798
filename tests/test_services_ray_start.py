"""A `ray start` that fails is ended completely and tried once more (railsweep.services.ray_head).

On a loaded machine `ray start --head` now and then exits 1 from inside Ray (its dashboard's API server gives
up starting) and leaves some of its processes running. The start is retried once, after everything the failed
one left (its process group, and its Ray session's processes that left the group) is ended.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from railsweep.errors import ConfigError
from railsweep.services import ray_head
from railsweep.services.process import Service

# a stand-in for `ray start`: leaves one child in its process group and one that left it (setsid) but names
# the start's Ray session, then fails as Ray's start does
_FAILING_START = """#!/bin/bash
sleep 300 &
echo $! > "$1/in_group"
setsid python3 -c 'import time; time.sleep(300)' "/tmp/ray/session_2026-12-02_00-00-00_000001_$$" &
echo $! > "$1/left_group"
echo "RuntimeError: Failed to start the dashboard" >&2
exit 1
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def _wait_gone(pid: int, timeout: float = 60.0) -> bool:  # a killed group goes in well under a second; 60 s for a busy machine
    deadline = time.time() + timeout
    while time.time() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


def test_a_failed_start_ends_its_process_group_and_its_session_and_says_why(tmp_path):
    script = tmp_path / "ray"
    script.write_text(_FAILING_START)
    script.chmod(0o755)
    log = tmp_path / "start.log"
    with pytest.raises(ray_head._StartFailed) as e:
        ray_head._start([str(script), str(tmp_path)], log, "http://127.0.0.1:9", block=False, timeout=60)
    assert "failed with code 1" in str(e.value) and "Failed to start the dashboard" in str(e.value)
    for name in ("in_group", "left_group"):
        pid = int((tmp_path / name).read_text())
        assert _wait_gone(pid), f"the failed start's {name} process {pid} is still running"


def _script(tmp_path: Path, body: str) -> Path:
    script = tmp_path / "ray"
    script.write_text("#!/bin/bash\n" + body)
    script.chmod(0o755)
    return script


def test_a_blocking_start_that_exits_before_it_started_is_a_failed_start(tmp_path):
    # the dashboard may answer while the raylet still dies (its agents slow on a loaded machine): what counts is
    # ray start's own word, and its exit before that word is a failure
    script = _script(
        tmp_path, 'sleep 300 & echo $! > "$1/in_group"\necho "node timed out during startup"\nexit 1\n'
    )
    with pytest.raises(ray_head._StartFailed, match="node timed out during startup"):
        ray_head._start(
            [str(script), str(tmp_path)], tmp_path / "log", "http://127.0.0.1:9", block=True, timeout=60
        )
    assert _wait_gone(int((tmp_path / "in_group").read_text()))


def test_a_blocking_start_is_ready_only_after_its_started_line_in_this_run(tmp_path):
    log = tmp_path / "log"
    log.write_text("Ray runtime started.\n")  # an earlier start's line in the same log does not count
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "version").write_text("{}")  # the dashboard's readiness probe answers 200 at once
    server = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(tmp_path), "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        port = int(server.stdout.readline().split("port ")[1].split()[0])
        script = _script(tmp_path, 'sleep 2\necho "Ray runtime started."\nexec sleep 300\n')
        t0 = time.monotonic()
        proc = ray_head._start([str(script)], log, f"http://127.0.0.1:{port}", block=True, timeout=60)
        assert time.monotonic() - t0 >= 2 and proc.poll() is None  # the script sleeps 2 s before its line
        Service("", proc).stop()
    finally:
        server.kill()
        server.wait()


def test_the_session_match_spares_other_sessions(tmp_path):
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)",
                              "/tmp/ray/session_2026-12-02_00-00-00_000001_4242"])  # fmt: skip
    try:
        hit = ray_head.end_failed_start(424)  # a pid whose digits are a prefix of the other session's
        assert other.pid not in hit and other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_session_process_whose_command_line_shows_only_after_the_first_scan_is_ended_too(tmp_path):
    """A process in the middle of exec shows an empty command line; a later scan finds and ends it."""
    child = subprocess.Popen(["sleep", "300"])
    entry = tmp_path / "proc" / str(child.pid)
    entry.mkdir(parents=True)
    (entry / "cmdline").write_bytes(b"")
    late = threading.Timer(0.1, (entry / "cmdline").write_bytes,
                           [b"python3\0/tmp/ray/session_2026-12-02_00-00-00_000001_999999\0"])  # fmt: skip
    late.start()
    try:
        hit = ray_head.end_failed_start(999999, proc_dir=tmp_path / "proc")  # no such process group: only the scans
        assert hit == [child.pid] and child.wait(timeout=10) == -9
    finally:
        late.cancel()
        child.kill()
        child.wait()

def _stubbed(monkeypatch, outcomes: list) -> list:
    calls = []

    def fake_start(cmd, log, url, block, timeout):
        calls.append(url)
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(ray_head, "ensure_ray_token", lambda: None)
    monkeypatch.setattr(ray_head, "_start", fake_start)
    return calls


def test_a_failed_start_is_tried_once_more_on_fresh_ports(monkeypatch, capsys):
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    calls = _stubbed(monkeypatch, [ray_head._StartFailed("`ray start` failed with code 1"), proc])
    head = ray_head.ensure_ray_head(isolated=True, block=True)
    assert len(calls) == 2 and calls[0] != calls[1] and head.dashboard == calls[1]
    assert isinstance(head.service, Service) and head.service.proc is proc
    assert "ray start: trying once more" in capsys.readouterr().err


def test_two_failed_starts_are_one_error_naming_the_last_failure(monkeypatch):
    _stubbed(monkeypatch, [ray_head._StartFailed("first"), ray_head._StartFailed("second: code 1 (log: x)")])
    with pytest.raises(ConfigError, match="^second: code 1 \\(log: x\\)$"):
        ray_head.ensure_ray_head(isolated=True)
