"""The KubeRay manifests (cluster/kuberay/*.yaml) validate against the vendored KubeRay v1.7.0 CRD schemas with
unknown fields rejected, and describe the autoscaling GPU cluster and the paper-preset Table 3 job."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml
from referencing import Registry
from referencing.jsonschema import DRAFT202012

REPO = Path(__file__).resolve().parents[1]
SCHEMAS = REPO / "cluster" / "schemas" / "kuberay-v1.7.0"
RAYCLUSTER = REPO / "cluster" / "kuberay" / "raycluster.yaml"
RAYJOB = REPO / "cluster" / "kuberay" / "rayjob.yaml"
MLFLOW = REPO / "cluster" / "k8s" / "mlflow.yaml"
K8S_VERSION = "v1.33.0"  # Kubernetes core types for the pod templates (strict: additionalProperties false)


def _strict(node):
    """Recursively add additionalProperties: false wherever `properties` is declared and unknown fields are not
    explicitly preserved: the API server would silently prune a typo; here it is an error."""
    if isinstance(node, dict):
        node = {k: _strict(v) for k, v in node.items()}
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def _k8s_definitions() -> dict:
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema" / f"{K8S_VERSION}-local-strict"
    return json.loads((root / "_definitions.json").read_text())


@pytest.fixture(scope="module")
def validators():
    schemas = {p.name: _strict(yaml.safe_load(p.read_text())) for p in SCHEMAS.glob("*.yaml")}
    registry = Registry().with_resources(
        [(s["$id"], DRAFT202012.create_resource(s)) for s in schemas.values()]
        + [("https://kubernetes.io/api/_definitions.json", DRAFT202012.create_resource(_k8s_definitions()))]
    )
    make = jsonschema.Draft202012Validator
    return {
        "RayCluster": make(schemas["rayclusters.ray.io.v1.yaml"], registry=registry),
        "RayJob": make(schemas["rayjobs.ray.io.v1.yaml"], registry=registry),
    }


def _errors(validators, doc) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in validators[doc["kind"]].iter_errors(doc)
    ]


def _load(path):
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("path", [RAYCLUSTER, RAYJOB], ids=lambda p: p.stem)
def test_manifest_validates_against_the_vendored_crd_schema(validators, path):
    assert _errors(validators, _load(path)) == []


def test_typo_in_a_kuberay_field_is_rejected_not_pruned(validators):
    doc = _load(RAYCLUSTER)
    doc["spec"]["enableInTreeAutoscalling"] = doc["spec"].pop("enableInTreeAutoscaling")
    assert any("enableInTreeAutoscalling" in e for e in _errors(validators, doc))


def test_typo_inside_an_embedded_pod_template_is_rejected(validators):
    doc = _load(RAYJOB)
    container = doc["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    container["imagePulPolicy"] = "Always"
    assert any("imagePulPolicy" in e for e in _errors(validators, doc))


def test_wrong_type_for_replica_bounds_is_rejected(validators):
    doc = _load(RAYCLUSTER)
    doc["spec"]["workerGroupSpecs"][0]["minReplicas"] = "zero"
    assert any("minReplicas" in e for e in _errors(validators, doc))


def test_unknown_submission_mode_is_rejected(validators):
    doc = _load(RAYJOB)
    doc["spec"]["submissionMode"] = "K8sJob"
    assert any("submissionMode" in e for e in _errors(validators, doc))


def test_manifests_never_set_fields_the_schema_leaves_unchecked():
    """Opaque (untranscribed) schema fields would let anything through; railsweep's manifests must not use them."""

    def opaque_paths(node, path=()):
        if isinstance(node, dict):
            if node.get("x-railsweep-opaque"):
                yield path
            for k, v in node.get("properties", {}).items():
                yield from opaque_paths(v, (*path, k))
            for k, v in node.get("$defs", {}).items():
                yield from opaque_paths(v, ("$defs", k))

    opaque = {p[-1] for f in SCHEMAS.glob("*.yaml") for p in opaque_paths(yaml.safe_load(f.read_text()))}
    assert opaque  # the schemas do mark some
    job_spec = _load(RAYJOB)["spec"]
    used = set(job_spec) | set(job_spec["rayClusterSpec"]) | set(_load(RAYCLUSTER)["spec"])
    assert used.isdisjoint(opaque)


def test_rayjob_runs_on_exactly_the_standalone_raycluster_spec():
    assert _load(RAYJOB)["spec"]["rayClusterSpec"] == _load(RAYCLUSTER)["spec"]


def test_raycluster_autoscales_a_gpu_worker_group_from_zero():
    spec = _load(RAYCLUSTER)["spec"]
    assert spec["enableInTreeAutoscaling"] is True
    assert spec["rayVersion"] == "2.60.0"
    head = spec["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in head["resources"].get("limits", {})
    assert int(spec["headGroupSpec"]["rayStartParams"]["num-cpus"]) >= 1  # CPU-only trials run on the head
    (group,) = spec["workerGroupSpecs"]
    assert group["minReplicas"] == 0 and group["replicas"] == 0 and group["maxReplicas"] >= 1
    worker = group["template"]["spec"]["containers"][0]
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "1"


def _env(container) -> dict:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def _mlflow_service_uri() -> str:
    svc = next(d for d in yaml.safe_load_all(MLFLOW.read_text()) if d["kind"] == "Service")
    port = svc["spec"]["ports"][0]["port"]
    return f"http://{svc['metadata']['name']}.{svc['metadata']['namespace']}.svc.cluster.local:{port}"


def test_rayjob_runs_the_paper_table3_sweep_with_the_mlflow_uri_from_the_environment():
    job = _load(RAYJOB)
    assert job["spec"]["entrypoint"] == "python sweeps/table3.py --preset paper"
    assert job["spec"]["shutdownAfterJobFinishes"] is True
    runtime_env = yaml.safe_load(job["spec"]["runtimeEnvYAML"])
    assert set(runtime_env) == {"env_vars"}  # no working_dir: the job runs in the image's /opt/railsweep
    uri = _mlflow_service_uri()
    assert runtime_env["env_vars"]["MLFLOW_TRACKING_URI"] == uri
    cluster = job["spec"]["rayClusterSpec"]
    pods = [cluster["headGroupSpec"]["template"]] + [g["template"] for g in cluster["workerGroupSpecs"]]
    for pod in pods:
        for container in pod["spec"]["containers"]:
            assert _env(container)["MLFLOW_TRACKING_URI"] == uri
    # the RayCluster lives in the namespace the MLflow Service was created in
    assert job["metadata"]["namespace"] == _load(RAYCLUSTER)["metadata"]["namespace"] == uri.split(".")[1]


def test_ray_token_authentication_comes_from_auth_options_not_from_pod_env():
    """authOptions.mode token makes the operator generate the token Secret and inject RAY_AUTH_MODE/RAY_AUTH_TOKEN
    into every Ray container and the submitter; a container that set RAY_AUTH_MODE itself would win over it."""
    job = _load(RAYJOB)["spec"]
    for spec in (_load(RAYCLUSTER)["spec"], job["rayClusterSpec"]):
        assert spec["authOptions"] == {"mode": "token"}
    cluster = job["rayClusterSpec"]
    pods = [job["submitterPodTemplate"], cluster["headGroupSpec"]["template"]]
    pods += [g["template"] for g in cluster["workerGroupSpecs"]]
    for pod in pods:
        for container in pod["spec"]["containers"]:
            assert not {"RAY_AUTH_MODE", "RAY_AUTH_TOKEN"} & set(_env(container)), container["name"]


def test_auth_options_typo_and_unknown_mode_are_rejected(validators):
    doc = _load(RAYCLUSTER)
    doc["spec"]["authOptions"] = {"mode": "tokens"}
    assert any("authOptions" in e for e in _errors(validators, doc))
    doc["spec"]["authOptions"] = {"mod": "token"}
    assert any("mod" in e for e in _errors(validators, doc))


def test_trials_log_to_mlflow_with_credentials_from_the_secret():
    cluster = _load(RAYJOB)["spec"]["rayClusterSpec"]
    pods = [cluster["headGroupSpec"]["template"]] + [g["template"] for g in cluster["workerGroupSpecs"]]
    for pod in pods:
        env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}
        for var, key in (("MLFLOW_TRACKING_USERNAME", "username"), ("MLFLOW_TRACKING_PASSWORD", "password")):
            assert "value" not in env[var]
            assert env[var]["valueFrom"]["secretKeyRef"] == {"name": "mlflow-auth", "key": key}


def test_vendored_schema_loader_adds_strictness_without_touching_preserved_objects():
    schema = {
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
        "$defs": {"free": {"type": "object", "properties": {}, "x-kubernetes-preserve-unknown-fields": True}},
    }
    strict = _strict(copy.deepcopy(schema))
    assert strict["additionalProperties"] is False
    assert strict["properties"]["a"]["additionalProperties"] is False
    assert "additionalProperties" not in strict["$defs"]["free"]
