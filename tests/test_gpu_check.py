"""bench/gpu_check.sh and bench/gpu_check.py: the GPU check's CPU path on the smoke world, end to end through the
shell script (pack, then run with --device cpu), its agreement arithmetic on lopsided records, and its bad inputs.

The run and its reference decode the same cell on the same CPU in float32, so they must agree sample for sample;
the run must import none of the packages the GPU machine lacks."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
import zipfile
from argparse import Namespace
from pathlib import Path

import pytest
import torch

from railsweep.miniworld import build_world

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "gpu_check.sh"
sys.path.insert(0, str(ROOT / "bench"))

import gpu_check  # noqa: E402
import gpu_check_env  # noqa: E402

SMALL = "--questions 4 --m 4 --max-new-tokens 16 --prompts-per-call 2 --threads 1".split()


def _sh(*args: str, python: str = sys.executable, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHON": python, **env}
    full_env.pop("OUT", None)
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=full_env, timeout=600
    )


@pytest.fixture(scope="module")
def packed(smoke_world, tmp_path_factory):
    """A pack of the smoke world's llama and a CPU run of the check on it: (pack dir, the run's JSON)."""
    root = build_world("smoke", cache_dir=smoke_world).root
    tmp = tmp_path_factory.mktemp("gpu_check")
    pack = _sh("pack", "--world", str(root), "--out", str(tmp / "pack"), "--no-wheels", *SMALL)
    assert pack.returncode == 0, pack.stderr[-3000:]
    run = _sh(
        "--device", "cpu", "--pack", str(tmp / "pack"), "--repeats", "1", "--out", str(tmp / "r.json"), *SMALL
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return tmp / "pack", json.loads((tmp / "r.json").read_text())


def test_pack_holds_one_family_and_a_cpu_reference_well_under_the_carry_limit(packed):
    pack, _ = packed
    assert sorted(p.name for p in (pack / "adapters").iterdir()) == ["clean", "co_gsm8k"]
    assert (pack / "base" / "model.safetensors").is_file()
    manifest = json.loads((pack / "manifest.json").read_text())
    assert manifest["family"] == "llama"
    assert manifest["bytes"] == sum(
        p.stat().st_size for p in pack.rglob("*") if p.is_file() and p.name != "manifest.json"
    )
    assert manifest["bytes"] < 64 << 20
    ref = json.loads((pack / "reference_cpu.json").read_text())
    assert ref["settings"] == {
        "m": 4,
        "temperature": 0.7,
        "max_new_tokens": 16,
        "seed": 0,
        "adapter": "co_gsm8k",
    }
    assert [q["index"] for q in ref["per_question"]] == [0, 1, 2, 3]
    assert all(len(q["samples"]) == q["m"] == 4 and 0 <= q["c"] <= 4 for q in ref["per_question"])


def test_cpu_run_matches_its_packed_reference_sample_for_sample(packed):
    _, result = packed
    agree = result["agreement"]["vs_packed_reference"]
    assert agree["questions"] == 4
    assert agree["identical_samples_share"] == 1.0
    assert agree["equal_c_share"] == agree["agree_share"] == 1.0
    assert agree["max_abs_rate_difference"] == 0.0
    assert "vs_cpu_here" not in result["agreement"]  # the run itself is the CPU side


def test_cpu_run_times_both_arms_against_the_forward_bound_of_the_same_batch(packed):
    _, result = packed
    speed, bound = result["speed"], result["forward_bound"]
    assert len(speed["rounds"]["identity"]) == len(speed["rounds"]["railcap"]) == 1
    ident, rail = speed["rounds"]["identity"][0], speed["rounds"]["railcap"][0]
    assert ident["greedy_tokens"] == 0 and rail["greedy_tokens"] > 0  # only RailCap decodes trajectories
    assert 0 < ident["sampled_tokens"] <= 4 * 4 * 16
    assert math.isclose(
        speed["ratio_railcap_vs_identity"], rail["tokens_per_s"] / ident["tokens_per_s"], rel_tol=1e-3
    )
    assert bound["rows"] == 2 * 4 and bound["steps"] == 16  # one engine call: 2 prompts x m rows
    assert bound["tokens_per_s"] > 0 and result["identity_vs_forward_bound"] > 0
    assert result["dtype"] == "float32" and result["environment"]["device"] == "cpu"


def test_run_imports_none_of_the_packages_the_gpu_machine_lacks(packed):
    _, result = packed
    assert result["device_lacks_imported"] == []


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names]
    names += [n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.level == 0 and n.module]
    return {n.split(".")[0] for n in names}


def test_the_environment_check_looks_for_every_package_the_run_imports():
    """gpu_check_env.NEEDED against the module-level imports of gpu_check.py and of every railsweep module it loads."""
    code = "import sys, json; sys.path.insert(0, 'bench'); import gpu_check; print(json.dumps([m.__file__ for n, m in sys.modules.items() if n.split('.')[0] in ('railsweep', 'gpu_check') and getattr(m, '__file__', None)]))"
    got = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    files = json.loads(got.stdout.splitlines()[-1])
    imported = set().union(*(_top_level_imports(Path(f)) for f in files))
    third_party = imported - set(sys.stdlib_module_names) - {"__future__", "railsweep", "gpu_check_env"}
    assert third_party <= set(gpu_check_env.NEEDED), sorted(third_party - set(gpu_check_env.NEEDED))
    assert not third_party & set(gpu_check.DEVICE_LACKS)
    assert gpu_check_env.missing_modules({"json": "json", "no_such_module_xyz": "nope"}) == [
        "no_such_module_xyz"
    ]


def _probe_wheel(folder: Path) -> Path:
    """A one-module pure-Python wheel, built by hand (no index, no build backend)."""
    folder.mkdir(parents=True)
    wheel = folder / "probe_pkg-1.0-py3-none-any.whl"
    info = "probe_pkg-1.0.dist-info"
    files = {
        "probe_pkg.py": "VALUE = 7\n",
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: probe_pkg\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(wheel, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
    return wheel


def test_a_missing_package_is_installed_from_the_packs_wheels_and_its_site_printed(
    tmp_path, monkeypatch, capsys
):
    _probe_wheel(tmp_path / "pack" / "wheels")
    site = tmp_path / "site"
    monkeypatch.setattr(gpu_check_env, "NEEDED", {"json": "json", "probe_pkg": "probe_pkg"})
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert gpu_check_env.main(["--device", "cpu", "--pack", str(tmp_path / "pack"), "--site", str(site)]) == 0
    out, err = capsys.readouterr()
    assert out.strip() == str(site) and (site / "probe_pkg.py").is_file()
    assert "installed from" in err and "probe_pkg" in err and "probe_pkg 1.0" in err


def test_agreement_against_a_naive_count_on_lopsided_records():
    dev = [{"index": 0, "c": 20, "m": 20, "samples": ["a"] * 20}, {"index": 1, "c": 3, "m": 20, "samples": ["b"] * 20},
           {"index": 2, "c": 5, "m": 10, "samples": ["c"] * 10}, {"index": 7, "c": 1, "m": 1, "samples": ["d"]}]  # fmt: skip
    cpu = [{"index": 0, "c": 0, "m": 20, "samples": ["x"] * 20}, {"index": 1, "c": 4, "m": 20, "samples": ["b"] * 19 + ["y"]},
           {"index": 2, "c": 5, "m": 10, "samples": ["c"] * 10}]  # fmt: skip
    got = gpu_check.agreement(dev, cpu)
    z1 = (3 / 20 - 4 / 20) / math.sqrt(7 / 40 * (1 - 7 / 40) * (2 / 20))
    assert abs(z1) < 1.96  # question 1 agrees, question 0 (20/20 against 0/20) does not
    assert got["questions"] == 3  # question 7 is not in the CPU record
    assert got["agree_share"] == round(2 / 3, 4) and got["equal_c_share"] == round(1 / 3, 4)
    assert got["identical_samples_share"] == round(29 / 50, 4)
    assert got["max_abs_rate_difference"] == 1.0
    assert got["solve_rate"] == {"device": round(28 / 50, 4), "cpu": round(9 / 50, 4)}
    assert gpu_check.z_pooled(20, 20, 20, 20) == 0.0


def test_a_reference_under_other_settings_is_skipped_with_both_settings_named(packed):
    pack, _ = packed
    args = Namespace(m=8, temperature=0.7, max_new_tokens=16, seed=0)
    got = gpu_check.reference_agreement(pack, [], args)
    assert "'m': 4" in got["skipped"] and "'m': 8" in got["skipped"]


def test_missing_packages_are_named_before_anything_runs(tmp_path):
    bare = (
        tmp_path / "bare-python"
    )  # the same interpreter without site-packages: no torch, transformers, peft
    bare.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    bare.chmod(0o755)
    got = _sh("--device", "cpu", "--pack", str(tmp_path), "--out", str(tmp_path / "r.json"), python=str(bare))
    assert got.returncode == 3
    assert "gpu_check: missing: torch, transformers, peft" in got.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    "args, words",
    [
        (["--device", "gpu"], "argument --device: must be auto, cpu, mps, cuda or cuda:N, got 'gpu'"),
        (["--m", "0"], "argument --m: must be an integer >= 1, got '0'"),
        (["--temperature", "0"], "argument --temperature: must be a finite number in (0, inf), got '0'"),
        (["--questions", "500"], "--questions 500: the pack's test split holds 24 questions"),
    ],
)
def test_bad_run_options_give_one_error_line_and_write_nothing(packed, tmp_path, capsys, args, words):
    pack, _ = packed
    code = gpu_check.main(
        ["run", "--pack", str(pack), "--device", "cpu", "--out", str(tmp_path / "r.json"), *args]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("railsweep: error: ") and words in err and "\n" not in err
    assert not (tmp_path / "r.json").exists()


def test_a_missing_pack_and_an_absent_cuda_are_refused_before_a_model_loads(
    packed, tmp_path, capsys, monkeypatch
):
    pack, _ = packed
    empty = tmp_path / "empty"
    empty.mkdir()
    assert gpu_check.main(["run", "--pack", str(empty), "--device", "cpu"]) == 2
    assert "missing manifest.json, reference_cpu.json, base/config.json" in capsys.readouterr().err
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu_check.main(["run", "--pack", str(pack), "--device", "cuda"]) == 2
    assert "--device cuda: CUDA is not available" in capsys.readouterr().err


def test_pack_refuses_an_unknown_family_and_a_folder_it_would_overwrite(
    packed, smoke_world, tmp_path, capsys
):
    root = str(build_world("smoke", cache_dir=smoke_world).root)
    assert gpu_check.main(["pack", "--world", root, "--family", "falcon", "--out", str(tmp_path / "p")]) == 2
    assert "--family 'falcon' is not in the world (families: llama" in capsys.readouterr().err
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "notes.txt").write_text("keep me")
    assert gpu_check.main(["pack", "--world", root, "--out", str(keep)]) == 2
    assert "is a non-empty folder that is not an earlier pack" in capsys.readouterr().err
    assert (keep / "notes.txt").read_text() == "keep me" and not (tmp_path / "p").exists()
