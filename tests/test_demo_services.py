"""What the demo leaves running for browsing, and the line that says how to end it."""

from __future__ import annotations

import os
import signal
import time

from railsweep.commands.demo import stop_services
from railsweep.services.mlflow_server import PID_FILE, ensure_mlflow_server
from railsweep.services.process import free_port, http_ok

RAY_ONLY = "`ray stop` ends the Ray head"


def test_the_demo_names_the_server_it_started_and_ending_that_group_ends_it(tmp_path):
    svc = ensure_mlflow_server(tmp_path, port=free_port())
    try:
        pid = int((tmp_path / PID_FILE).read_text())
        assert pid == svc.proc.pid and os.getpgid(pid) == pid
        assert stop_services(str(tmp_path), None) == (
            f"{RAY_ONLY}, `kill -- -$(cat {tmp_path.resolve() / PID_FILE})` the MLflow server"
        )
        assert stop_services(str(tmp_path), "http://127.0.0.1:5000") == RAY_ONLY  # a server it did not start
        os.killpg(pid, signal.SIGTERM)  # what `kill -- -$(cat RUN_DIR/mlflow-server.pid)` does
        svc.proc.wait(30)
        deadline = time.time() + 30
        while http_ok(svc.url + "/health") and time.time() < deadline:
            time.sleep(0.5)
        assert not http_ok(svc.url + "/health")
        assert stop_services(str(tmp_path), None) == RAY_ONLY  # the file is stale now: never named
    finally:
        svc.stop()


def test_a_pid_file_naming_another_process_or_nothing_is_never_named(tmp_path):
    (tmp_path / PID_FILE).write_text(f"{os.getpid()}\n")  # alive, but not an MLflow server over this folder
    assert stop_services(str(tmp_path), None) == RAY_ONLY
    (tmp_path / PID_FILE).write_text("not a pid\n")
    assert stop_services(str(tmp_path), None) == RAY_ONLY
    assert stop_services(str(tmp_path / "elsewhere"), None) == RAY_ONLY
