"""Secure by default on clusters: no file under cluster/ turns Ray's token authentication off or exposes the
dashboard or MLflow without authentication, the secrets are made on the cluster (never committed), and an MLflow
server started as cluster/k8s/mlflow.yaml starts it (the basic-auth app) refuses anonymous requests and accepts
its user."""

from __future__ import annotations

import configparser
import os
import re
import secrets
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
from base64 import b64encode
from pathlib import Path

import pytest
import yaml
from mlflow.cli import server as mlflow_server_cli

REPO = Path(__file__).resolve().parents[1]
CLUSTER = REPO / "cluster"
LAUNCHERS = sorted((CLUSTER / "launcher").glob("*.yaml"))
KUBERAY = sorted((CLUSTER / "kuberay").glob("*.yaml"))
MLFLOW_K8S = CLUSTER / "k8s" / "mlflow.yaml"
AUTH_INI = CLUSTER / "mlflow" / "basic_auth.ini"
LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _text_files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]


def _yaml_docs(path: Path) -> list:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _walk(node, path=()):
    """Every (path, dict) in a YAML tree."""
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, (*path, i))


def _mlflow_server_params(argv: list[str]) -> dict:
    assert argv[:2] == ["mlflow", "server"], argv
    return mlflow_server_cli.make_context("server", list(argv[2:])).params


def _launcher_mlflow_argv(cfg: dict) -> list[str]:
    (line,) = [c for c in cfg["head_setup_commands"] if "mlflow server" in c]
    started = line[line.index("nohup ") + len("nohup ") :]
    return shlex.split(started.split(">")[0])


def _k8s_docs() -> dict:
    return {d["kind"]: d for d in _yaml_docs(MLFLOW_K8S)}


def _k8s_container() -> dict:
    return _k8s_docs()["Deployment"]["spec"]["template"]["spec"]["containers"][0]


# --- Ray: token authentication everywhere, no dashboard exposed without it ---------------------------------


@pytest.mark.parametrize("path", _text_files(CLUSTER), ids=lambda p: p.relative_to(CLUSTER).as_posix())
def test_no_file_under_cluster_disables_ray_authentication(path):
    text = path.read_text()
    assert not re.search(r"RAY_AUTH_MODE\s*[=:]\s*[\"']?disabled", text)
    if path.suffix != ".yaml" or "schemas" in path.parts:
        return
    for doc in _yaml_docs(path):
        for where, node in _walk(doc):
            if node.get("name") == "RAY_AUTH_MODE":  # a container env entry
                assert node.get("value") == "token", where
            if "authOptions" in node:
                assert node["authOptions"].get("mode", "token") == "token", where


@pytest.mark.parametrize("path", LAUNCHERS, ids=lambda p: p.stem)
def test_every_launcher_ray_start_runs_with_token_auth_and_a_loopback_dashboard(path):
    cfg = yaml.safe_load(path.read_text())
    starts = [c for key in ("head_start_ray_commands", "worker_start_ray_commands") for c in cfg[key]]
    starts = [c for c in starts if "ray start" in c]
    assert len(starts) == 2
    for command in starts:
        assert re.search(r"RAY_AUTH_MODE=token ray start ", command), command
    (head,) = [c for c in starts if "--head" in c]
    assert re.search(r"--dashboard-host[= ]127\.0\.0\.1\b", head)  # reached through `ray dashboard`'s tunnel


@pytest.mark.parametrize("path", LAUNCHERS, ids=lambda p: p.stem)
def test_launcher_makes_the_secrets_on_the_head_and_syncs_them_to_workers(path):
    cfg = yaml.safe_load(path.read_text())
    setup = " ; ".join(cfg["head_setup_commands"])
    # Ray's own generator; its output (the token) goes nowhere, the file is the user's only
    assert re.search(r"ray get-auth-token --generate >/dev/null 2>&1", setup)
    assert "umask 077" in setup and "chmod 600 ~/.ray/auth_token" in setup
    assert "secrets.token_urlsafe" in setup  # the MLflow password, made once on the head
    assert set(cfg["cluster_synced_files"]) == {"~/.ray/auth_token", "/mlflow/auth/mlflow.env"}
    worker = next(c for c in cfg["worker_start_ray_commands"] if "ray start" in c)
    assert "chmod 600 ~/.ray/auth_token" in worker


@pytest.mark.parametrize("path", KUBERAY, ids=lambda p: p.stem)
def test_kuberay_head_dashboard_is_exposed_only_with_token_auth(path):
    doc = yaml.safe_load(path.read_text())
    spec = doc["spec"]["rayClusterSpec"] if doc["kind"] == "RayJob" else doc["spec"]
    head = spec["headGroupSpec"]
    host = head["rayStartParams"].get("dashboard-host", "localhost")
    if host not in LOOPBACK:
        assert spec.get("authOptions", {}).get("mode") == "token"
    assert head.get("serviceType", "ClusterIP") == "ClusterIP"  # no LoadBalancer/NodePort out of the cluster
    assert not head.get("enableIngress", False)


# --- MLflow: the basic-auth app on every cluster server, credentials from secrets ---------------------------


def test_every_mlflow_server_under_cluster_runs_the_basic_auth_app():
    servers = [_k8s_container()["command"]] + [
        _launcher_mlflow_argv(yaml.safe_load(p.read_text())) for p in LAUNCHERS
    ]
    mentions = sum(len(re.findall(r"mlflow server|- server\n", p.read_text())) for p in _text_files(CLUSTER))
    assert len(servers) == 3 and mentions >= len(servers)
    for argv in servers:
        assert _mlflow_server_params(argv)["app_name"] == "basic-auth", argv


def test_k8s_mlflow_takes_its_user_and_keys_from_a_secret_and_its_settings_from_the_config_map():
    env = {e["name"]: e for e in _k8s_container()["env"]}
    for var, key in (("MLFLOW_AUTH_ADMIN_USERNAME", "username"), ("MLFLOW_AUTH_ADMIN_PASSWORD", "password"),
                     ("MLFLOW_FLASK_SERVER_SECRET_KEY", "flask-secret-key")):  # fmt: skip
        assert env[var]["valueFrom"]["secretKeyRef"] == {"name": "mlflow-auth", "key": key}
    config_path = Path(env["MLFLOW_AUTH_CONFIG_PATH"]["value"])
    mount = next(m for m in _k8s_container()["volumeMounts"] if m["mountPath"] == str(config_path.parent))
    volume = next(
        v
        for v in _k8s_docs()["Deployment"]["spec"]["template"]["spec"]["volumes"]
        if v["name"] == mount["name"]
    )
    config_map = _k8s_docs()["ConfigMap"]
    assert volume["configMap"]["name"] == config_map["metadata"]["name"]
    in_cluster, committed = configparser.ConfigParser(), configparser.ConfigParser()
    in_cluster.read_string(config_map["data"][config_path.name])
    committed.read_string(AUTH_INI.read_text())
    assert dict(in_cluster["mlflow"]) == dict(committed["mlflow"])
    assert "admin_password" not in committed["mlflow"]
    # the user store sits on the persistent volume next to MLflow's own store
    assert committed["mlflow"]["database_uri"].startswith("sqlite:////mlflow/")
    assert _k8s_docs()["Service"]["spec"].get("type", "ClusterIP") == "ClusterIP"


@pytest.mark.parametrize("path", LAUNCHERS, ids=lambda p: p.stem)
def test_launcher_mlflow_and_trials_read_the_credentials_from_the_head_made_file(path):
    cfg = yaml.safe_load(path.read_text())
    (line,) = [c for c in cfg["head_setup_commands"] if "nohup mlflow server" in c]
    assert ". /mlflow/auth/mlflow.env" in line
    assert "MLFLOW_AUTH_ADMIN_PASSWORD=$MLFLOW_TRACKING_PASSWORD" in line
    assert "MLFLOW_AUTH_CONFIG_PATH=/opt/railsweep/cluster/mlflow/basic_auth.ini" in line
    assert (REPO / "cluster" / "mlflow" / "basic_auth.ini").is_file()
    for key in ("head_start_ray_commands", "worker_start_ray_commands"):
        start = next(c for c in cfg[key] if "ray start" in c)
        # trials inherit the MLflow user from the Ray processes; the CSRF key stays with the server
        assert ". /mlflow/auth/mlflow.env" in start and "unset MLFLOW_FLASK_SERVER_SECRET_KEY" in start


# --- no secret committed -------------------------------------------------------------------------------------


def _tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [REPO / p for p in out.decode().split("\0") if p and (REPO / p).is_file()]


def _secret_values() -> list[str]:
    """The Ray tokens this machine holds (read, never printed)."""
    values = [os.environ.get("RAY_AUTH_TOKEN", "")]
    for path in {
        Path(os.environ.get("RAY_AUTH_TOKEN_PATH", "/nonexistent")),
        Path.home() / ".ray" / "auth_token",
    }:
        if path.is_file():
            values.append(path.read_text().strip())
    return [v for v in values if len(v) >= 16]


_LITERAL_SECRET = re.compile(
    r"(?:RAY_AUTH_TOKEN|MLFLOW_TRACKING_PASSWORD|MLFLOW_AUTH_ADMIN_PASSWORD|MLFLOW_FLASK_SERVER_SECRET_KEY|"
    r"admin_password)\s*[=:]\s*[\"']?(?![\"']?\$)[A-Za-z0-9+/_\-]{12,}"
)


def test_no_secret_value_appears_in_any_committed_file():
    values = _secret_values()
    offenders = []
    for path in _tracked_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        rel = path.relative_to(REPO).as_posix()
        if any(v in text for v in values):
            offenders.append(f"{rel}: holds this machine's Ray token")  # never the value itself
        if _LITERAL_SECRET.search(text):
            offenders.append(f"{rel}: a literal secret assigned")
        if path.suffix == ".yaml" and rel.startswith("cluster/"):
            for doc in _yaml_docs(path):
                if doc.get("kind") == "Secret" and (doc.get("data") or doc.get("stringData")):
                    offenders.append(f"{rel}: a Secret with its data")
    assert offenders == []


def test_the_literal_secret_pattern_catches_a_committed_password_but_not_a_reference():
    assert _LITERAL_SECRET.search(
        "MLFLOW_TRACKING_PASSWORD=" + "hunter2" * 3
    )  # built, so this file holds no literal
    assert _LITERAL_SECRET.search("RAY_AUTH_TOKEN: " + secrets.token_hex(32))
    assert not _LITERAL_SECRET.search("MLFLOW_AUTH_ADMIN_PASSWORD=$MLFLOW_TRACKING_PASSWORD")
    assert not _LITERAL_SECRET.search("- name: MLFLOW_TRACKING_PASSWORD\n  valueFrom:")


# --- the basic-auth app, for real ----------------------------------------------------------------------------


def _get(url: str, user: str | None = None, password: str | None = None) -> int | None:
    headers = {}
    if user is not None:
        headers["Authorization"] = "Basic " + b64encode(f"{user}:{password}".encode()).decode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


@pytest.mark.slow
def test_mlflow_basic_auth_server_refuses_anonymous_requests_and_accepts_its_user(tmp_path):
    """The k8s manifest's own server command and auth settings, with the volume paths moved into tmp_path."""
    from railsweep.services.process import free_port

    argv = list(_k8s_container()["command"])
    port = free_port()
    moved = [a.replace("/mlflow/", f"{tmp_path}/") for a in argv[2:]]
    moved = ["--host=127.0.0.1" if a.startswith("--host=") else a for a in moved]
    moved = [f"--port={port}" if a.startswith("--port=") else a for a in moved]
    ini = configparser.ConfigParser()
    ini.read_string(_k8s_docs()["ConfigMap"]["data"]["basic_auth.ini"])
    ini["mlflow"]["database_uri"] = ini["mlflow"]["database_uri"].replace("/mlflow/", f"{tmp_path}/")
    with open(tmp_path / "basic_auth.ini", "w") as f:
        ini.write(f)
    user, password = "railsweep", secrets.token_urlsafe(24)
    env = {**os.environ, "MLFLOW_AUTH_CONFIG_PATH": str(tmp_path / "basic_auth.ini"),
           "MLFLOW_AUTH_ADMIN_USERNAME": user, "MLFLOW_AUTH_ADMIN_PASSWORD": password,
           "MLFLOW_FLASK_SERVER_SECRET_KEY": secrets.token_hex(32), "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}  # fmt: skip
    env.pop("MLFLOW_TRACKING_USERNAME", None)
    env.pop("MLFLOW_TRACKING_PASSWORD", None)
    mlflow = Path(sys.executable).parent / "mlflow"
    log = tmp_path / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(mlflow), "server", *moved], cwd=tmp_path, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while _get(url + "/health") != 200:
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.time() < deadline, "mlflow server did not come up"
            time.sleep(0.5)
        api = url + "/api/2.0/mlflow/experiments/search?max_results=1"
        assert _get(api) == 401
        assert _get(api, user, "not-" + password) == 401
        assert _get(api, "intruder", password) == 401
        assert _get(api, user, password) == 200
        # the client path the trials take: credentials from MLFLOW_TRACKING_USERNAME/PASSWORD
        client_env = {**env, "MLFLOW_TRACKING_USERNAME": user, "MLFLOW_TRACKING_PASSWORD": password}
        code = (
            f"from mlflow import MlflowClient; print(MlflowClient({url!r}).create_experiment('auth-check'))"
        )
        done = subprocess.run([sys.executable, "-c", code], env=client_env, capture_output=True, text=True,
                              timeout=120)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        anonymous = subprocess.run([sys.executable, "-c", code.replace("auth-check", "anon")], env=env,
                                   capture_output=True, text=True, timeout=120)  # fmt: skip
        assert anonymous.returncode != 0 and "401" in anonymous.stderr + anonymous.stdout
        assert password not in log.read_text() + done.stdout + done.stderr
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(30)
