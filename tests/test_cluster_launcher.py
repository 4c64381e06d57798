"""The Ray cluster-launcher configs (cluster/launcher/*.yaml) pass Ray's own offline validation and describe the
cluster the README promises: a CPU head, one GPU worker type that autoscales from zero, the railsweep image,
set-up installing railsweep[vllm] from the pinned constraints, and an MLflow server on the head."""

from __future__ import annotations

import copy
import shlex
from pathlib import Path

import jsonschema
import pytest
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

REPO = Path(__file__).resolve().parents[1]
LAUNCHER_CONFIGS = sorted((REPO / "cluster" / "launcher").glob("*.yaml"))


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _validated(raw: dict) -> dict:
    """Ray's own path for `ray up`: merge the provider's defaults.yaml, then the JSON schema + cross-field checks."""
    cfg = prepare_config(copy.deepcopy(raw))
    validate_config(cfg)
    return cfg


def _gpu_types(cfg: dict) -> dict:
    return {k: v for k, v in cfg["available_node_types"].items() if v["resources"].get("GPU", 0) > 0}


def test_there_is_an_aws_and_a_gcp_launcher_config():
    assert {p.name for p in LAUNCHER_CONFIGS} == {"aws.yaml", "gcp.yaml"}


@pytest.mark.parametrize("path", LAUNCHER_CONFIGS, ids=lambda p: p.stem)
def test_launcher_config_passes_ray_prepare_and_validate(path):
    cfg = _validated(_load(path))
    assert cfg["provider"]["type"] == path.stem


def test_unknown_node_type_key_is_rejected_by_ray_validation():
    raw = _load(REPO / "cluster" / "launcher" / "aws.yaml")
    gpu = next(iter(_gpu_types(raw)))
    raw["available_node_types"][gpu]["max_gpus"] = 4  # typo'd / invented field
    with pytest.raises(jsonschema.ValidationError, match="max_gpus"):
        _validated(raw)


def test_fractional_resources_are_rejected_by_ray_validation():
    raw = _load(REPO / "cluster" / "launcher" / "gcp.yaml")
    gpu = next(iter(_gpu_types(raw)))
    raw["available_node_types"][gpu]["resources"]["GPU"] = 0.5
    with pytest.raises(jsonschema.ValidationError):
        _validated(raw)


def test_min_workers_above_the_global_cap_is_rejected():
    raw = _load(REPO / "cluster" / "launcher" / "aws.yaml")
    gpu = next(iter(_gpu_types(raw)))
    raw["available_node_types"][gpu]["min_workers"] = raw["max_workers"] + 1
    with pytest.raises(ValueError, match="max_workers"):
        _validated(raw)


@pytest.mark.parametrize("path", LAUNCHER_CONFIGS, ids=lambda p: p.stem)
def test_head_is_cpu_only_and_one_gpu_type_autoscales_from_zero(path):
    cfg = _validated(_load(path))
    head = cfg["available_node_types"][cfg["head_node_type"]]
    assert head["resources"].get("GPU", 0) == 0 and head["resources"]["CPU"] >= 2
    gpus = _gpu_types(cfg)
    assert len(gpus) == 1
    (gpu,) = gpus.values()
    assert gpu["min_workers"] == 0
    assert 1 <= gpu["max_workers"] <= cfg["max_workers"]


@pytest.mark.parametrize("path", LAUNCHER_CONFIGS, ids=lambda p: p.stem)
def test_max_workers_override_from_the_command_line_validates(path):
    # `ray up --max-workers N` rewrites the global cap; the GPU type's own cap must follow it to take effect.
    raw = _load(path)
    raw["max_workers"] = 32
    next(iter(_gpu_types(raw).values()))["max_workers"] = 32
    assert _validated(raw)["max_workers"] == 32


@pytest.mark.parametrize("path", LAUNCHER_CONFIGS, ids=lambda p: p.stem)
def test_setup_installs_railsweep_with_the_vllm_extra_under_the_pinned_constraints(path):
    cfg = _validated(_load(path))
    pip_lines = [c for c in cfg["setup_commands"] if c.startswith("pip install")]
    assert pip_lines, cfg["setup_commands"]
    argv = shlex.split(pip_lines[0])
    assert "--no-cache-dir" in argv
    assert argv[argv.index("-c") + 1] == "/opt/railsweep/cluster/constraints.txt"
    assert argv[-1] == "/opt/railsweep[vllm]"
    # what the set-up installs is this checkout, synced by `ray up` (run from the repository root)
    assert cfg["file_mounts"]["/opt/railsweep"] == "."
    assert (REPO / "cluster" / "constraints.txt").is_file()
    assert ".venv" in cfg["rsync_exclude"]  # never ship a local virtualenv to every node


@pytest.mark.parametrize("path", LAUNCHER_CONFIGS, ids=lambda p: p.stem)
def test_cluster_runs_the_railsweep_worker_image(path):
    cfg = _validated(_load(path))
    image = cfg["docker"]["image"]
    assert image.rsplit("/", 1)[-1].startswith("railsweep-worker:")
    assert "--shm-size=16g" in cfg["docker"]["run_options"]
