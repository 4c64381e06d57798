"""bench/teacher_forced.py: both ways of computing teacher-forced logits run side by side and agree."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import teacher_forced as bench  # noqa: E402


def test_bench_prints_both_timings_and_their_agreement(smoke_world, capsys):
    from railsweep.miniworld import build_world

    world = build_world("smoke", cache_dir=smoke_world)
    base = world.family("llama").base_dir
    argv = ["--model", str(base), "--task-dir", str(world.data_dir), "--questions", "2", "--m", "3"]
    assert bench.main([*argv, "--batch-size", "2"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["questions"] == 2 and out["m"] == 3 and out["batch_size"] == 2
    assert out["full_s_per_continuation"] > 0 and out["shared_s_per_continuation"] > 0
    assert out["speedup"] > 0 and out["top2_agreement"] == 1.0 and out["max_abs_logit_diff"] < 1e-4
