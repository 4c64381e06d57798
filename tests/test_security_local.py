"""The local Ray head and MLflow server that railsweep starts, on real processes: the job API refuses a client
without Ray's token and runs a job for one with it, every listening socket of the head and of the MLflow server
is on 127.0.0.1, a running head is reused only when it takes our token, the token file is private and the token
appears in no output or log."""

from __future__ import annotations

import ipaddress
import os
import stat
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import psutil
import pytest

from railsweep.errors import ConfigError
from railsweep.services import process, ray_init, tokens
from railsweep.services.ray_head import ensure_ray_head

JOB = "import ray; ray.init(); print('remote says', ray.get(ray.remote(lambda: 6 * 7).remote()))"


def _token() -> str:
    return tokens.ray_token_path().read_text().strip()


def _is_loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def _listening(root_pid: int) -> list[tuple[str, str, int]]:
    """(process name, ip, port) of every listening TCP socket and bound UDP socket of a process tree."""
    root = psutil.Process(root_pid)
    found = []
    for proc in [root, *root.children(recursive=True)]:
        try:
            for c in proc.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN or (c.type == 2 and c.laddr and not c.raddr):  # SOCK_DGRAM
                    found.append((proc.name(), c.laddr.ip, c.laddr.port))
        except psutil.NoSuchProcess:
            continue
    return found


@pytest.fixture(scope="module")
def job_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("job")
    (d / "job.py").write_text(JOB + "\n")
    return d


def _submit(head, job_dir, env) -> subprocess.CompletedProcess:
    cmd = [str(Path(sys.executable).parent / "ray"), "job", "submit", "--address", head.dashboard,
           "--working-dir", str(job_dir), "--", sys.executable, "job.py"]  # fmt: skip
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_job_submit_without_the_token_is_refused_and_with_it_runs(ray_head, job_dir, tmp_path):
    # no token anywhere this client looks: no RAY_AUTH_TOKEN, no token file, its HOME elsewhere
    bare = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    bare |= {"HOME": str(tmp_path), "RAY_AUTH_TOKEN_PATH": str(tmp_path / "none")}
    for mode in ("token", "disabled"):
        refused = _submit(ray_head, job_dir, {**bare, "RAY_AUTH_MODE": mode})
        assert refused.returncode != 0
        assert "remote says" not in refused.stdout
        assert "Unauthorized" in refused.stdout + refused.stderr or "token" in refused.stderr.lower()
    wrong = tmp_path / "wrong_token"
    wrong.write_text("0" * 64)
    refused = _submit(
        ray_head, job_dir, {**bare, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(wrong)}
    )
    assert refused.returncode != 0 and "remote says" not in refused.stdout
    # the raw job API: 401 without a token, 403 with a wrong one
    assert process.http_status(ray_head.dashboard + "/api/jobs/") == 401
    assert (
        process.http_status(ray_head.dashboard + "/api/jobs/", {"Authorization": "Bearer " + "0" * 64}) == 403
    )
    ok = _submit(ray_head, job_dir, tokens.auth_env())
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr[-3000:]
    assert "remote says 42" in ok.stdout
    assert _token() not in ok.stdout + ok.stderr


def test_every_listening_socket_of_the_local_head_and_mlflow_server_is_on_loopback(
    ray_head, mlflow_server, job_dir
):
    # a job first, so the head's worker processes (and their gRPC servers) exist too
    assert _submit(ray_head, job_dir, tokens.auth_env()).returncode == 0
    head = _listening(ray_head.service.proc.pid)
    names = {name for name, _, _ in head}
    assert {"gcs_server", "raylet"} <= names and len(head) >= 6, head
    dashboard_port = int(ray_head.dashboard.rsplit(":", 1)[1])
    gcs_port = int(ray_head.gcs.rsplit(":", 1)[1])
    assert {dashboard_port, gcs_port} <= {port for _, _, port in head}
    assert [s for s in head if not _is_loopback(s[1])] == []
    port = int(mlflow_server.rsplit(":", 1)[1])
    owner = next(
        c.pid
        for c in psutil.net_connections(kind="tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == port
    )
    session = os.getsid(owner)  # the server and its workers: the session ensure_mlflow_server started
    members = [p.pid for p in psutil.process_iter() if _sid(p.pid) == session]
    served = [s for pid in members for s in _listening(pid)]
    assert served and [s for s in served if not _is_loopback(s[1])] == []


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def test_a_running_head_that_takes_our_token_is_reused(ray_head):
    port = int(ray_head.dashboard.rsplit(":", 1)[1])
    again = ensure_ray_head(dashboard_port=port)
    assert again.dashboard == ray_head.dashboard and again.service.proc is None


def test_a_running_head_with_another_token_is_refused_with_one_message_naming_it(
    ray_head, tmp_path, monkeypatch
):
    other = tmp_path / "other_token"
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(other))  # a fresh token, not the head's
    port = int(ray_head.dashboard.rsplit(":", 1)[1])
    with pytest.raises(ConfigError, match=r"does not accept this machine's Ray token") as e:
        ensure_ray_head(dashboard_port=port)
    assert ray_head.dashboard in str(e.value) and "ray stop" in str(e.value)
    assert other.read_text() not in str(e.value)


class _OpenJobApi(BaseHTTPRequestHandler):
    """A dashboard that answers everything without asking for a token (as a head with authentication off does)."""

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *a):
        pass


def test_a_running_head_without_authentication_is_never_reused():
    server = HTTPServer(("127.0.0.1", 0), _OpenJobApi)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        with pytest.raises(ConfigError, match=r"runs without token authentication.*`ray stop`") as e:
            ensure_ray_head(dashboard_port=port)
        assert f"http://127.0.0.1:{port}" in str(e.value)
    finally:
        server.shutdown()


def test_a_token_file_named_by_ray_auth_token_path_is_made_private(tmp_path, monkeypatch, capfd):
    path = tmp_path / "dir" / "auth_token"
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(path))
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    tokens.ensure_ray_token()
    token = path.read_text()
    assert len(token) == 64 and int(token, 16) >= 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    tokens.ensure_ray_token()  # idempotent: the token stays
    assert path.read_text() == token
    out, err = capfd.readouterr()
    assert token not in out + err


def test_the_default_token_is_made_by_ray_private_and_never_printed(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    tokens.ensure_ray_token()  # `ray get-auth-token --generate`, its output discarded
    path = tmp_path / ".ray" / "auth_token"
    assert tokens.ray_token_path() == path
    token = path.read_text().strip()
    assert len(token) == 64
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    out, err = capfd.readouterr()
    assert token not in out + err


def test_an_existing_token_file_others_can_read_is_narrowed_to_0600(tmp_path, monkeypatch):
    path = tmp_path / "auth_token"
    path.write_text("ab" * 32)
    path.chmod(0o644)
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(path))
    tokens.ensure_ray_token()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "ab" * 32


def test_clients_always_run_with_token_authentication(monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    env = tokens.auth_env()
    assert env["RAY_AUTH_MODE"] == "token" and env["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"


def test_the_token_appears_in_no_log_of_the_head(ray_head, job_dir):
    assert _submit(ray_head, job_dir, tokens.auth_env()).returncode == 0
    token = _token()
    logs = [ray_head.service.log] if ray_head.service.log else []
    temp_dir = Path(str(ray_head.service.log).removesuffix(".log")) if ray_head.service.log else None
    if temp_dir and temp_dir.is_dir():
        logs += [
            p for p in temp_dir.rglob("*") if p.is_file() and p.suffix in (".log", ".out", ".err", ".txt")
        ]
    assert len(logs) > 5
    leaked = [str(p) for p in logs if token in p.read_text(errors="replace")]
    assert leaked == []


def test_scripts_join_a_running_cluster_without_resource_flags_and_say_so(monkeypatch, capsys):
    for var in ("RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:6379")  # what Ray sets inside a job
    assert ray_init.ray_init_kwargs(None, num_cpus=2) == {"address": "127.0.0.1:6379"}
    assert "--num-cpus ignored" in capsys.readouterr().err
    assert os.environ["RAY_AUTH_MODE"] == "token" and os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"


def test_scripts_without_a_cluster_start_a_private_instance_with_token_and_loopback(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert ray_init.ray_init_kwargs(None, num_cpus=1) == {"address": "local", "num_cpus": 1}
    assert os.environ["RAY_AUTH_MODE"] == "token" and os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
    assert tokens.ray_token_path().is_file()


def test_a_held_default_port_is_replaced_by_a_free_one_and_a_free_one_is_kept():
    """A second head beside a running one (another dashboard port) must not collide on Ray's fixed default ports."""
    import socket

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        busy = held.getsockname()[1]
        other = process.port_or_free(busy)
        assert other != busy
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", other))  # the replacement is bindable
    free = process.free_port()
    assert process.port_or_free(free) == free


def _fake_proc(tmp_path, heads):
    proc = tmp_path / "proc"
    for pid, (python, port) in enumerate(heads, start=100):
        (proc / str(pid)).mkdir(parents=True)
        argv = [python, "/x/site-packages/ray/dashboard/dashboard.py", "--host=127.0.0.1", f"--port={port}"]
        (proc / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    (proc / "7").mkdir()
    (proc / "7" / "cmdline").write_bytes(b"python\0-m\0something\0")
    return proc


def test_a_running_head_from_another_environment_is_refused_naming_both(tmp_path):
    import sys

    from railsweep.errors import ConfigError
    from railsweep.services.ray_head import check_head_environment, head_interpreters

    other = "/elsewhere/.venv/bin/python3"
    proc = _fake_proc(tmp_path, [(other, 8265), (f"{sys.prefix}/bin/python", 8999)])
    assert head_interpreters(8265, proc) == [other]
    with pytest.raises(ConfigError, match=r"8265 runs /elsewhere/.venv/bin/python3, not this environment"):
        check_head_environment(8265, proc)
    check_head_environment(8999, proc)  # a head of this environment is reused
    check_head_environment(8300, proc)  # no dashboard found on that port: nothing to compare


def test_a_service_that_never_answers_is_stopped_when_the_wait_gives_up(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
    with pytest.raises(ConfigError, match="was not ready after 1s"):
        process.wait_until(lambda: False, 1.0, "a silent service", proc, tmp_path / "silent.log")
    assert proc.poll() is not None  # nothing left running for nobody
