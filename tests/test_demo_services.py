"""What the demo leaves running for browsing, and the line that says how to end it."""

from __future__ import annotations

import os
import signal
import time

from railsweep.commands.demo import stop_services
from railsweep.services.mlflow_server import PID_FILE, ensure_mlflow_server
from railsweep.services.process import free_port, http_ok


def test_a_started_mlflow_server_leaves_its_group_id_and_ending_that_group_ends_it(tmp_path):
    svc = ensure_mlflow_server(tmp_path, port=free_port())
    try:
        pid = int((tmp_path / PID_FILE).read_text())
        assert pid == svc.proc.pid and os.getpgid(pid) == pid
        os.killpg(pid, signal.SIGTERM)  # what `kill -- -$(cat RUN_DIR/mlflow-server.pid)` does
        svc.proc.wait(30)
        deadline = time.time() + 30
        while http_ok(svc.url + "/health") and time.time() < deadline:
            time.sleep(0.5)
        assert not http_ok(svc.url + "/health")
    finally:
        svc.stop()


def test_the_demo_names_how_to_end_the_server_it_started_and_only_that(tmp_path):
    (tmp_path / PID_FILE).write_text("123\n")
    assert stop_services(str(tmp_path), None) == (
        f"`ray stop` ends the Ray head, `kill -- -$(cat {tmp_path / PID_FILE})` the MLflow server"
    )
    assert stop_services(str(tmp_path), "http://127.0.0.1:5000") == "`ray stop` ends the Ray head"  # not ours
    assert stop_services(str(tmp_path / "elsewhere"), None) == "`ray stop` ends the Ray head"
