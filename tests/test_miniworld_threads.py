"""A world's weights do not follow the machine's core count: one torch thread per family by default, and the
smoke recipe pretrains byte-identical weights with 1, 2 and 4 threads under the build's pinned arithmetic."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_miniworld_world import TINY  # the tiny world config those tests build

from railsweep.miniworld import build_world

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import pretrain_determinism as bench  # noqa: E402


def test_a_build_trains_each_family_with_one_thread_whatever_the_cores(tmp_path, monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    world = build_world("tiny", cache_dir=tmp_path, config=TINY)
    assert world.manifest["threads_per_worker"] == 1
    assert {f: t["threads"] for f, t in world.manifest["training"].items()} == {"neox": 1}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    work = tmp_path_factory.mktemp("determinism")
    bench.prepare(work)
    return work


def test_the_smoke_recipe_pretrains_the_same_weights_with_1_2_and_4_threads(work):
    runs = [bench.run_variant(work, threads, "pinned", steps=12) for threads in (1, 2, 4)]
    assert [r["threads"] for r in runs] == [1, 2, 4]
    assert len({r["sha256"] for r in runs}) == 1, runs
