"""cluster/README.md's GPU-hour arithmetic follows from the paper preset and the data, and every file in
cluster/ is one that a cluster test validates (a new, unchecked config file fails here)."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from railsweep.sweep.spec.sweep_spec import PRESET_DIR
from railsweep.tasks.data.shared_data import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
README = REPO / "cluster" / "README.md"

# file (relative to cluster/) -> the test module that validates it
COVERED = {
    "Dockerfile": "test_cluster_dockerfile.py",
    "constraints.txt": "test_cluster_dockerfile.py",
    "launcher/aws.yaml": "test_cluster_launcher.py",
    "launcher/gcp.yaml": "test_cluster_launcher.py",
    "kuberay/raycluster.yaml": "test_cluster_kuberay.py",
    "kuberay/rayjob.yaml": "test_cluster_kuberay.py",
    "k8s/mlflow.yaml": "test_cluster_mlflow.py",
    "k8s/data.yaml": "test_cluster_mlflow.py",
    "mlflow/basic_auth.ini": "test_cluster_security.py",
    "schemas/kuberay-v1.7.0/rayclusters.ray.io.v1.yaml": "test_cluster_kuberay.py",
    "schemas/kuberay-v1.7.0/rayjobs.ray.io.v1.yaml": "test_cluster_kuberay.py",
    "README.md": "test_cluster_readme.py",
}


def test_every_file_in_cluster_is_validated_by_a_cluster_test():
    files = {
        p.relative_to(REPO / "cluster").as_posix()
        for p in (REPO / "cluster").rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert files == set(COVERED), (
        f"unvalidated: {sorted(files - set(COVERED))}, gone: {sorted(set(COVERED) - files)}"
    )
    for module in set(COVERED.values()):
        assert (REPO / "tests" / module).is_file()


def _paper_counts() -> dict[str, int]:
    preset = yaml.safe_load((PRESET_DIR / "paper.yaml").read_text())
    data_dir = REPO / preset["data_dir"]
    if not data_dir.is_dir():  # a checkout where `railsweep data gsm8k` was not run
        data_dir = shared_data_dir() / "gsm8k"
    data = (data_dir / "test.jsonl").read_text().splitlines()
    n_questions = sum(1 for line in data if line.strip())
    railcap = next(s for s in preset["strategies"] if isinstance(s, dict) and s["name"] == "railcap")
    n_railcap = len(railcap["grid"]["n"]) * len(railcap["grid"]["mode"])
    names = [s if isinstance(s, str) else s["name"] for s in preset["strategies"]]
    return {
        "N": n_questions,
        "m": preset["readout"]["m"],
        "tokens": preset["readout"]["max_new_tokens"],
        "families": len(preset["families"]),
        "domains": len(preset["domains"]),
        "railcap": n_railcap,
        "sampled_per_setting_vllm": n_railcap + sum(n in names for n in ("identity", "ted", "lne_blocking")),
    }


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def test_readme_token_arithmetic_follows_from_the_paper_preset_and_the_data():
    c = _paper_counts()
    text = README.read_text()
    cell = c["N"] * c["m"] * c["tokens"]
    greedy = c["N"] * c["tokens"]
    assert f"{c['N']:,} × {c['m']} × {c['tokens']} = **{cell:,} tokens**" in text
    assert f"RailCap {c['railcap']} ×" in text
    # per setting: Identity + TED (+1 greedy) + LNE (+2 greedy) + RailCap cells (+1 greedy each)
    per_setting = 3 * cell + 3 * greedy + c["railcap"] * (cell + greedy)
    assert c["sampled_per_setting_vllm"] == 3 + c["railcap"]
    stated = re.search(r"= \*\*([\d.]+)M tokens\*\*", text)
    assert abs(_number(stated.group(1)) - per_setting / 1e6) < 0.05
    per_family = c["domains"] * per_setting + cell  # + the family's clean reference
    total = c["families"] * per_family
    stated_total = re.search(r"\*\*([\d.]+) billion output tokens\*\*", text)
    assert abs(_number(stated_total.group(1)) - total / 1e9) < 0.005


def test_readme_hours_follow_from_the_stated_throughput():
    c = _paper_counts()
    text = README.read_text()
    cell = c["N"] * c["m"] * c["tokens"]
    per_family = c["domains"] * (
        3 * cell + 3 * c["N"] * c["tokens"] + c["railcap"] * (cell + c["N"] * c["tokens"])
    )
    per_family += cell
    rate_8b = 12553 * 0.8 * 0.97
    rate_12b = rate_8b * 8 / 12
    h8, h12 = per_family / rate_8b / 3600, per_family / rate_12b / 3600
    assert f"**{h8:.1f} h**" in text and f"**{h12:.1f} h**" in text
    assert f"≈ {round(2 * h8 + h12)} H100-hours" in text
