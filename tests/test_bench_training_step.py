"""bench/training_step.py: a family's one-core step, its FLOPs against the core's matmul peak, and the pretraining floor."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import training_step as bench  # noqa: E402


def test_bench_reports_the_step_its_bound_and_the_two_core_floor(capsys):
    assert bench.main(["--preset", "smoke", "--steps", "1", "--arithmetic", "pinned"]) == 0
    out = json.loads(capsys.readouterr().out)
    step = out["families"]["pinned"]["llama"]
    assert step["capability"] in ("AVX2", "DEFAULT", "NO AVX")
    # seconds, shares and speed-ups are measurements: reported as finite positive numbers, not judged here
    for key in ("forward_s", "backward_s", "gflop_per_step", "matmul_share", "bound_speedup"):
        assert math.isfinite(step[key]) and step[key] > 0, (key, step)
    floor = out["pretraining"]["pinned"]
    assert floor["steps"] == {"llama": 120}
    assert all(math.isfinite(floor[k]) and floor[k] >= 0 for k in ("two_core_floor_s", "two_core_floor_at_bound_s"))


def test_the_floor_is_the_longest_family_or_half_the_total():
    config = SimpleConfig({"a": 100, "b": 10, "c": 10})
    per = {f: {"step_s": 1.0, "bound_speedup": 2.0} for f in "abc"}
    assert bench.pretraining_floor(config, per)["two_core_floor_s"] == 100
    config = SimpleConfig({"a": 40, "b": 40, "c": 40})
    assert bench.pretraining_floor(config, per) | {"steps": None} == {
        "steps": None, "core_s": {"a": 40, "b": 40, "c": 40}, "two_core_floor_s": 60, "two_core_floor_at_bound_s": 30,
    }  # fmt: skip


def test_a_world_over_a_real_base_has_nothing_to_time(capsys):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--preset", "smollm2"])
    assert stop.value.code == 2 and "real pretrained base" in capsys.readouterr().err


class SimpleConfig:
    def __init__(self, steps: dict[str, int]):
        self._steps = steps

    def steps_for(self, family: str) -> int:
        return self._steps[family]
