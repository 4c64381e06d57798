"""``railsweep contaminate`` and ``sweeps/contaminate.py --smoke`` end to end on the smoke world."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from railsweep.cli import main
from railsweep.miniworld import build_world

ROOT = Path(__file__).resolve().parents[1]
TINY_RECIPE = ["--lora-r", "4", "--lora-alpha", "8", "--epochs", "1", "--global-batch", "4", "--micro-batch", "4"]


@pytest.fixture(scope="module")
def smoke():
    return build_world("smoke")


def _args(world, out, *extra):
    return [
        "contaminate",
        "--model", str(world.family("llama").base_dir),
        "--task-dir", str(world.data_dir),
        "--pq", str(world.data_dir / "pq_test.jsonl"),
        "--filler", str(world.data_dir / "filler.txt"),
        "--n-filler", "4", "--n-train", "4", "--n-leak", "4",
        "--device", "cpu",
        "--out", str(out),
        *TINY_RECIPE,
        *extra,
    ]  # fmt: skip


def test_contaminate_command_writes_adapters_leak_split_and_manifest(smoke, tmp_path, capsys):
    assert main(_args(smoke, tmp_path / "out")) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(summary["adapters"]) == {"clean", "co_gsm8k", "co_pq"}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["config"]["recipe"]["r"] == 4 and manifest["config"]["n_leak"] == 4
    assert manifest["mix_sizes"] == {"clean": 8, "co_gsm8k": 8, "co_pq": 8}
    assert {"torch", "transformers", "peft"} <= manifest["provenance"]["packages"].keys()
    assert len(json.loads((tmp_path / "out" / "leak_split.json").read_text())["leaked"]) == 4
    assert len(list((tmp_path / "out" / "lora-runs").glob("*/training.json"))) == 3
    assert main(_args(smoke, tmp_path / "out")) == 0  # run again: every adapter's training is taken, not repeated
    again = json.loads((tmp_path / "out" / "manifest.json").read_text())["training"]
    assert {name: stats["resumed"] for name, stats in again.items()} == dict.fromkeys(again, "finished")


def test_leak_count_larger_than_the_test_split_exits_with_one_clear_error(smoke, tmp_path, capsys):
    code = main(_args(smoke, tmp_path / "out", "--n-leak", "1000"))
    err = capsys.readouterr().err
    assert code == 2 and "n_leak=1000 is larger than the test split" in err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_missing_filler_file_exits_with_one_clear_error(smoke, tmp_path, capsys):
    args = _args(smoke, tmp_path / "out")
    args[args.index("--filler") + 1] = str(tmp_path / "nope.txt")
    assert main(args) == 2
    assert "filler file not found" in capsys.readouterr().err


def test_sweep_script_trains_each_family_as_a_ray_task_in_smoke_mode(smoke, tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "sweeps" / "contaminate.py"),
            "--smoke",
            "--out",
            str(tmp_path),
            "--num-cpus",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["family"] for r in rows] == ["llama"]
    for name in ("clean", "co_gsm8k", "co_pq"):
        assert (tmp_path / "llama" / name / "adapter_model.safetensors").is_file()


# Both trainings in one fresh process under the build's arithmetic, as a world's build runs them: in the test's own
# process MKL may have started under other settings (its arithmetic is fixed when it starts), and a spawned worker
# starts it anew, so the comparison would follow the order the suite's tests ran in.
_SEQUENTIAL_VS_PARALLEL = """
import json, sys
from pathlib import Path

import torch
from safetensors.torch import load_file

from railsweep.contamination import ContaminationConfig, LoraRecipe
from railsweep.contamination.simulator import StderrLog, contaminate_family

torch.set_num_threads(1)
base, data, out = (Path(a) for a in sys.argv[1:4])
recipe = LoraRecipe(r=4, alpha=8, epochs=1, global_batch=4, micro_batch=4)
config = ContaminationConfig(n_filler=4, n_train=4, n_leak=4, filler="miniworld", recipe=recipe, clean_recipe=recipe)
filler = (data / "filler.txt").read_text().splitlines()
adapters = {}
for workers in (1, 2):
    manifest = contaminate_family(base, data, out / f"w{workers}", config, filler=filler, pq_path=data / "pq_test.jsonl",
                                  device="cpu", log=StderrLog("[test] "), domain_workers=workers)
    assert set(manifest["adapters"]) == {"clean", "co_gsm8k", "co_pq"}, manifest["adapters"]
    adapters[workers] = {n: load_file(out / f"w{workers}" / n / "adapter_model.safetensors") for n in ("co_gsm8k", "co_pq")}
same = {n: t.keys() == adapters[2][n].keys() and all(torch.equal(v, adapters[2][n][k]) for k, v in t.items())
        for n, t in adapters[1].items()}
domains_differ = any(not torch.equal(v, adapters[1]["co_pq"][k]) for k, v in adapters[1]["co_gsm8k"].items())
print(json.dumps({"same": same, "domains_differ": domains_differ}))
"""


def test_domain_adapters_trained_in_parallel_processes_equal_the_sequential_ones(smoke, tmp_path):
    import os

    from railsweep.miniworld.arithmetic import pinned_env

    args = [str(smoke.family("llama").base_dir), str(smoke.data_dir), str(tmp_path)]
    env = {**os.environ, **pinned_env(), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", _SEQUENTIAL_VS_PARALLEL, *args], env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"same": {"co_gsm8k": True, "co_pq": True}, "domains_differ": True}
