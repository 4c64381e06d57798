"""The cluster's MLflow tracking server (cluster/k8s/mlflow.yaml, and the one the launcher starts on the head):
strict Kubernetes schemas, a command MLflow 3.17's own CLI accepts, a durable backend store, artifacts served
over HTTP, and --allowed-hosts that admit the Service DNS names (MLflow 3 answers 403 to unknown Host headers)."""

from __future__ import annotations

import shlex
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from mlflow.cli import server as mlflow_server_cli
from mlflow.server.security_utils import is_allowed_host_header

REPO = Path(__file__).resolve().parents[1]
MLFLOW = REPO / "cluster" / "k8s" / "mlflow.yaml"
K8S_VERSION = "1.33.0"


def _docs() -> dict:
    return {d["kind"]: d for d in yaml.safe_load_all(MLFLOW.read_text())}


def _container() -> dict:
    return _docs()["Deployment"]["spec"]["template"]["spec"]["containers"][0]


def _server_params(argv: list[str]) -> dict:
    """Parse `mlflow server ...` with MLflow's own click command (an unknown flag raises click.NoSuchOption)."""
    assert argv[:2] == ["mlflow", "server"], argv
    return mlflow_server_cli.make_context("server", list(argv[2:])).params


def test_manifest_holds_namespace_auth_config_pvc_deployment_and_service():
    assert set(_docs()) == {"Namespace", "ConfigMap", "PersistentVolumeClaim", "Deployment", "Service"}


@pytest.mark.parametrize("kind", ["Namespace", "ConfigMap", "PersistentVolumeClaim", "Deployment", "Service"])
def test_each_object_validates_against_the_strict_kubernetes_schema(kind):
    kubernetes_validate.validate(_docs()[kind], K8S_VERSION, strict=True)


@pytest.mark.parametrize("path", sorted((REPO / "cluster" / "k8s").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_kubernetes_manifest_validates_against_the_strict_schema(path):
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert docs
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_a_typo_in_the_deployment_is_rejected_by_the_strict_schema():
    dep = _docs()["Deployment"]
    dep["spec"]["template"]["spec"]["containers"][0]["comand"] = ["mlflow"]
    with pytest.raises(kubernetes_validate.ValidationError, match="comand"):
        kubernetes_validate.validate(dep, K8S_VERSION, strict=True)


def test_server_command_parses_with_mlflow_cli_and_serves_artifacts_with_allowed_hosts():
    params = _server_params(_container()["command"])
    assert params["serve_artifacts"] is True
    assert params["artifacts_destination"]
    assert params["allowed_hosts"]
    assert params["host"] == "0.0.0.0"  # the pod's address, behind a ClusterIP Service and the basic-auth app
    assert params["app_name"] == "basic-auth"
    assert params["default_artifact_root"] is None  # else workers would write to their own local paths


def test_an_unknown_server_flag_is_caught_by_the_cli_parse():
    import click

    with pytest.raises(click.NoSuchOption):
        _server_params(["mlflow", "server", "--allowed-host=x"])


def test_allowed_hosts_admit_the_service_dns_names_and_port_forward_but_not_strangers():
    docs = _docs()
    allowed = _server_params(_container()["command"])["allowed_hosts"].split(",")
    svc = docs["Service"]
    name, ns, port = svc["metadata"]["name"], svc["metadata"]["namespace"], svc["spec"]["ports"][0]["port"]
    for host in (f"{name}.{ns}.svc.cluster.local:{port}", f"{name}.{ns}.svc:{port}", f"{name}:{port}"):
        assert is_allowed_host_header(allowed, host), host
    assert is_allowed_host_header(allowed, "localhost:5000")  # kubectl port-forward for the UI
    assert not is_allowed_host_header(allowed, "attacker.example:5000")


def test_backend_store_and_artifacts_live_on_the_persistent_volume():
    docs = _docs()
    params = _server_params(_container()["command"])
    mount = next(m for m in _container()["volumeMounts"])
    volume = next(
        v for v in docs["Deployment"]["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
    )
    assert volume["persistentVolumeClaim"]["claimName"] == docs["PersistentVolumeClaim"]["metadata"]["name"]
    root = mount["mountPath"].rstrip("/") + "/"
    assert params["backend_store_uri"] == f"sqlite:///{root}mlflow.db"
    assert params["artifacts_destination"].startswith(root)
    # one SQLite writer: a single server process and no rolling update that overlaps two pods
    assert params["workers"] == "1"
    assert docs["Deployment"]["spec"]["replicas"] == 1
    assert docs["Deployment"]["spec"]["strategy"]["type"] == "Recreate"


def test_service_routes_to_the_server_port():
    docs = _docs()
    svc, dep = docs["Service"], docs["Deployment"]
    assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    port_by_name = {p["name"]: p["containerPort"] for p in _container()["ports"]}
    assert (
        port_by_name[svc["spec"]["ports"][0]["targetPort"]] == _server_params(_container()["command"])["port"]
    )
    assert all(d["metadata"].get("namespace", d["metadata"]["name"]) == "railsweep" for d in docs.values())


def _launcher_mlflow_argv(path: Path) -> list[str]:
    cfg = yaml.safe_load(path.read_text())
    (line,) = [c for c in cfg["head_setup_commands"] if "mlflow server" in c]
    started = line[line.index("nohup ") + len("nohup ") :]  # the part after the "already running?" check
    return shlex.split(started.split(">")[0])


@pytest.mark.parametrize("name", ["aws.yaml", "gcp.yaml"])
def test_launcher_head_runs_an_mlflow_server_workers_can_reach_by_private_ip(name):
    params = _server_params(_launcher_mlflow_argv(REPO / "cluster" / "launcher" / name))
    assert params["serve_artifacts"] is True and params["artifacts_destination"]
    # the store lives on the host directory the head container mounts, so it survives container restarts
    cfg = yaml.safe_load((REPO / "cluster" / "launcher" / name).read_text())
    host_dir, mount = cfg["docker"]["head_run_options"][0].split("=", 1)[1].split(":")
    assert params["backend_store_uri"] == f"sqlite:///{mount}/mlflow.db"
    assert params["artifacts_destination"].startswith(mount + "/")
    assert any(c.startswith(f"mkdir -p {host_dir}") for c in cfg["initialization_commands"])
    allowed = params["allowed_hosts"].split(",")
    for host in ("10.0.3.7:5000", "172.31.4.2:5000", "localhost:5000"):
        assert is_allowed_host_header(allowed, host), host
    assert not is_allowed_host_header(allowed, "attacker.example:5000")
