"""Every command the cluster configs run exists and parses its arguments: the RayJob's sweep entry point (with
the paper preset's paths landing on the shared volume inside the image layout), and each `ray start` of the
launcher configs through Ray's own CLI."""

from __future__ import annotations

import posixpath
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ray.scripts.scripts import start as ray_start_cli

from railsweep.sweep.spec.sweep_spec import PRESET_DIR

REPO = Path(__file__).resolve().parents[1]
RAYJOB = REPO / "cluster" / "kuberay" / "rayjob.yaml"
RAYCLUSTER = REPO / "cluster" / "kuberay" / "raycluster.yaml"


def _workdir() -> str:
    lines = (REPO / "cluster" / "Dockerfile").read_text().splitlines()
    (workdir,) = [ln.split(None, 1)[1].strip() for ln in lines if ln.startswith("WORKDIR ")]
    return workdir


def _entrypoint() -> list[str]:
    return shlex.split(yaml.safe_load(RAYJOB.read_text())["spec"]["entrypoint"])


def test_rayjob_entrypoint_script_is_in_the_repository_and_copied_into_the_image():
    argv = _entrypoint()
    assert argv[0] == "python"
    script = argv[1]
    assert (REPO / script).is_file()
    copies = [
        ln.split()[-2:]
        for ln in (REPO / "cluster" / "Dockerfile").read_text().splitlines()
        if ln.startswith("COPY ")
    ]
    top = script.split("/")[0]
    assert [top, top] in copies  # copied to <WORKDIR>/<top>, where the job runs it


def test_rayjob_entrypoint_parses_its_arguments():
    argv = _entrypoint()
    # argparse validates `--preset paper` (a choices check) before it acts on --help, so a bad preset exits 2.
    result = subprocess.run(
        [sys.executable, *argv[1:], "--help"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "--preset" in result.stdout
    bad = subprocess.run(
        [sys.executable, argv[1], "--preset", "no-such-preset", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2


def _mounts(pod_spec: dict) -> dict[str, str]:
    """mountPath -> claimName for the PVC-backed mounts of the first container."""
    claims = {
        v["name"]: v["persistentVolumeClaim"]["claimName"]
        for v in pod_spec.get("volumes", [])
        if "persistentVolumeClaim" in v
    }
    return {
        m["mountPath"]: claims[m["name"]]
        for m in pod_spec["containers"][0]["volumeMounts"]
        if m["name"] in claims
    }


def test_paper_preset_paths_land_on_the_shared_volume_in_every_ray_pod():
    """The job runs in the image WORKDIR; the preset's relative data and adapter paths must resolve to the
    shared RWX volume (cluster/k8s/data.yaml) on the head and on every GPU worker."""
    preset = yaml.safe_load((PRESET_DIR / "paper.yaml").read_text())
    paths = [preset["data_dir"], preset["leak_split"]]
    paths += [p for fam in preset["families"].values() for p in fam["adapters"].values()]
    data_claim = yaml.safe_load((REPO / "cluster" / "k8s" / "data.yaml").read_text())["metadata"]["name"]
    spec = yaml.safe_load(RAYCLUSTER.read_text())["spec"]
    pods = [spec["headGroupSpec"]["template"]["spec"]] + [
        g["template"]["spec"] for g in spec["workerGroupSpecs"]
    ]
    for pod in pods:
        mounts = _mounts(pod)
        for rel in paths:
            absolute = posixpath.normpath(posixpath.join(_workdir(), rel))
            hits = [m for m in mounts if absolute == m or absolute.startswith(m + "/")]
            assert hits and mounts[hits[0]] == data_claim, (rel, absolute, mounts)


def _segments(command: str) -> list[list[str]]:
    """Shell segments split on `;` and `&&`, each without its leading VAR=value assignments."""
    out = []
    for part in command.replace("&&", ";").split(";"):
        argv = shlex.split(part)
        while argv and "=" in argv[0] and not argv[0].startswith("-"):
            argv = argv[1:]
        if argv:
            out.append(argv)
    return out


@pytest.mark.parametrize("name", ["aws.yaml", "gcp.yaml"])
@pytest.mark.parametrize("key", ["head_start_ray_commands", "worker_start_ray_commands"])
def test_launcher_ray_start_commands_parse_with_rays_cli(name, key):
    cfg = yaml.safe_load((REPO / "cluster" / "launcher" / name).read_text())
    (command,) = [c for c in cfg[key] if "ray start" in c]
    segments = _segments(command)
    starts = [a for a in segments if a[:2] == ["ray", "start"]]
    assert len(starts) == 1
    params = ray_start_cli.make_context("start", starts[0][2:]).params
    assert params["head"] is (key == "head_start_ray_commands")
    if params["head"]:
        assert params["autoscaling_config"] == "~/ray_bootstrap_config.yaml"
        # the job API: on the head's loopback only, reached through `ray dashboard`'s SSH tunnel
        assert params["dashboard_host"] == "127.0.0.1"
    else:
        assert params["address"] == "$RAY_HEAD_IP:6379"
    # Ray starts in the image's WORKDIR (where the code is) with the MLflow URI in its environment
    assert segments[0] == ["cd", _workdir()]
    assert re.search(r"export MLFLOW_TRACKING_URI=http://.+?:5000;", command), command


@pytest.mark.parametrize("name", ["aws.yaml", "gcp.yaml"])
def test_paper_preset_paths_land_on_the_launcher_file_mounts(name):
    preset = yaml.safe_load((PRESET_DIR / "paper.yaml").read_text())
    cfg = yaml.safe_load((REPO / "cluster" / "launcher" / name).read_text())
    mounts = {dst: src for dst, src in cfg["file_mounts"].items()}
    assert mounts[_workdir()] == "."
    paths = [preset["data_dir"], preset["leak_split"]]
    paths += [p for fam in preset["families"].values() for p in fam["adapters"].values()]
    for rel in paths:
        absolute = posixpath.normpath(posixpath.join(_workdir(), rel))
        assert any(absolute.startswith(m + "/") for m in mounts), (rel, absolute)
    # the data the preset names sits in the checkout (`railsweep data gsm8k` writes data/), synced to the WORKDIR
    assert not posixpath.relpath(posixpath.join(_workdir(), preset["data_dir"]), _workdir()).startswith("..")
