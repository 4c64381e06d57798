"""A world's weights do not follow the machine's core count: each family trains on one torch thread, whatever the
cores (whether other thread counts would write the same bits is a measurement: bench/pretrain_determinism.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from test_miniworld_world import TINY  # the tiny world config those tests build

from railsweep.miniworld import build_world
from railsweep.miniworld.arithmetic import pinned_env

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import pretrain_determinism as bench  # noqa: E402


def test_a_build_trains_each_family_with_one_thread_whatever_the_cores(tmp_path, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    world = build_world("tiny", cache_dir=tmp_path, config=TINY)
    assert world.manifest["threads_per_worker"] == 1
    assert {f: t["threads"] for f, t in world.manifest["training"].items()} == {"neox": 1}


def test_the_determinism_bench_groups_variants_by_the_weights_they_wrote():
    runs = [{"threads": t, "arithmetic": a, "capability": "AVX2", "seconds": 1.0, "tokens_per_s": 10, "sha256": h}
            for t, a, h in ((1, "pinned", "x"), (2, "pinned", "y"), (1, "strict", "z"), (2, "strict", "z"))]  # fmt: skip
    out = bench.summary(runs)
    assert sorted(map(sorted, out["identical_weights"])) == [
        ["threads=1 pinned (AVX2)"], ["threads=1 strict (AVX2)", "threads=2 strict (AVX2)"], ["threads=2 pinned (AVX2)"]]
    assert out["variants"]["threads=2 pinned (AVX2)"]["sha256"] == ["y"]


def test_a_determinism_variant_runs_in_its_own_process_under_its_arithmetic(tmp_path):
    bench.prepare(tmp_path)
    run = bench.run_variant(tmp_path, 1, "strict", steps=1)
    assert run["MKL_CBWR"] == "AVX2,STRICT" and run["threads"] == 1 and run["steps"] == 1
    assert len(run["sha256"]) == 64
    assert run["capability"] == ("AVX2" if pinned_env() else run["capability"])
