"""bench/ray_worker_share.py: the share of a core a Ray worker keeps beside a busy loop started three ways."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import ray_worker_share as bench  # noqa: E402


@pytest.mark.parametrize("value", ["0", "x", "1e9"])
def test_a_bad_duration_is_refused_before_ray_starts(capsys, value):
    with pytest.raises(SystemExit) as stop:
        bench.main(["--seconds", value])
    assert stop.value.code == 2 and "--seconds" in capsys.readouterr().err


@pytest.mark.slow
def test_the_bench_reports_every_way_from_a_real_ray_head(capsys):
    assert bench.main(["--seconds", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out["ways"]) == set(bench.WAYS)
    for way in out["ways"].values():
        # shares and seconds are measurements (a share sampled from /proc over a second overshoots 1 by jitter):
        # the test checks that each is reported as a finite, non-negative number, the bench says what they are
        assert way["worker_nice"] == min(os.nice(0) + 15, 19)  # Ray adds 15 to the niceness it was started at
        for key in ("worker_share_while_shared", "competitor_cpu_s", "competitor_wall_s"):
            assert math.isfinite(way[key]) and way[key] >= 0.0, (key, way)
