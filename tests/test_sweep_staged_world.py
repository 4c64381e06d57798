"""A world built beside the sweep: stages heard as they land, and waves of the families ready so far run on the
cores the build leaves (railsweep.sweep.run.staged, railsweep.sweep.run.waves, build_world's on_ready)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from railsweep.errors import ConfigError
from railsweep.miniworld import world as world_mod
from railsweep.sweep.run import staged, waves
from railsweep.sweep.run.staged import StagedWorld, free_cores


def _fake_build(script):
    """A build_world stand-in that plays ``script``: stage names for on_ready, ``"wait"`` to block on the
    returned event, an exception to raise; returns a sentinel world at the end."""
    gate = threading.Event()

    def build(preset, cache_dir=None, on_ready=None):
        for step in script:
            if step == "wait":
                gate.wait(10)
            elif isinstance(step, BaseException):
                raise step
            else:
                on_ready(step)
        return SimpleNamespace(root="world", families=["llama", "neox"])

    return build, gate


def test_a_staged_world_hears_the_data_then_each_family_then_the_finished_world(monkeypatch, tmp_path):
    build, gate = _fake_build(["data", "llama", "wait"])
    monkeypatch.setattr(staged, "build_world", build)
    w = StagedWorld("mini", tmp_path)
    w.wait_for_data()
    assert w.data_ready and w.world is None
    w.wait()
    assert w.ready == {"llama"} and w.building == 2  # mini's three families, one trained
    assert w.provisional().family("neox").base_dir == w.root / "families" / "neox" / "base"
    gate.set()
    assert w.result().root == "world"
    assert w.ready == {"llama", "gemma", "neox"} and w.building == 0


def test_a_failed_world_build_raises_its_error_in_the_driver(monkeypatch, tmp_path):
    build, _ = _fake_build(["data", ConfigError("no room on the disk")])
    monkeypatch.setattr(staged, "build_world", build)
    w = StagedWorld("mini", tmp_path)
    with pytest.raises(ConfigError, match="no room on the disk"):
        w.result()


def test_free_cores_leave_one_core_to_each_family_still_training():
    assert [free_cores(2, b) for b in (3, 2, 1, 0)] == [0, 0, 1, 2]
    assert free_cores(8, 3) == 5


class _ScriptedWorld:
    """A StagedWorld's driver-facing surface, whose stages land one per blocking wait()."""

    def __init__(self, families, landings):
        self.families, self.landings = families, list(landings)
        self.ready: set[str] = set()
        self.world = None
        self.waits = 0

    @property
    def building(self):
        return 0 if self.world is not None else len(self.families) - len(self.ready)

    def wait(self, timeout=None):
        if timeout == 0 or not self.landings:
            return False
        self.waits += 1
        stage = self.landings.pop(0)
        if stage is None:
            self.world = "finished"
            self.ready = set(self.families)
        else:
            self.ready.add(stage)
        return True


def _run(families):
    fams = tuple(SimpleNamespace(name=f) for f in families)
    said: list[str] = []
    checked: list[set[str]] = []  # the families whose files the wave checked
    spec = SimpleNamespace(families=fams, check_paths=lambda only: checked.append(set(only)))
    return SimpleNamespace(spec=spec, say=said.append, timings={}, said=said, checked=checked)


def _cells(families):
    return [SimpleNamespace(family=f, cell_id=f"{f}-{i}") for f in families for i in range(2)]


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(waves, "cluster_resources", lambda: (2.0, 0.0))


def test_a_wave_waits_until_the_build_leaves_a_core_then_takes_the_first_ready_family(two_cores):
    fams = ["llama", "gemma", "neox"]
    run, world = _run(fams), _ScriptedWorld(fams, ["gemma", "llama", "neox", None])
    wave, cpus = waves._next_wave(run, _cells(fams), world)
    # gemma alone ready: neox and llama train on both cores; llama ready too: one core free, one family
    # its engines take both cores: the core the build frees mid-wave does not wait for the wave
    assert world.waits == 2 and cpus == 2.0
    assert {c.family for c in wave} == {"llama"} and run.checked == [{"llama"}]
    assert "llama, gemma" not in run.said[0] and "cells of llama on 1 free core(s), engines on all 2" in run.said[0]
    assert run.timings["world_wait_s"] >= 0


def test_once_the_world_is_finished_every_cell_left_runs_on_the_whole_cluster(two_cores):
    fams = ["llama", "gemma", "neox"]
    run, world = _run(fams), _ScriptedWorld(fams, [None])
    left = [c for c in _cells(fams) if c.family != "llama"]
    wave, cpus = waves._next_wave(run, left, world)
    assert wave == left and cpus is None and run.checked == [{"gemma", "neox"}]


def test_a_cached_world_runs_in_one_wave(two_cores):
    cells = _cells(["llama"])
    assert waves._next_wave(_run(["llama"]), cells, None) == (cells, None)


def test_the_build_tells_each_family_as_it_finishes_with_the_leak_split_written_first(tmp_path):
    split = {"leaked": [0, 2], "unleaked": [1, 3], "seed": 7}
    for f in ("llama", "neox"):
        (tmp_path / "families" / f / "adapters").mkdir(parents=True)
        (tmp_path / "families" / f / "adapters" / "leak_split.json").write_text(json.dumps(split))
    (tmp_path / "data").mkdir()
    heard: list[tuple[str, bool]] = []
    release = threading.Event()

    def on_ready(stage):
        heard.append((stage, (tmp_path / "data" / "leak_split.json").is_file()))
        release.set()

    with ThreadPoolExecutor(2) as pool:
        futures = {"llama": pool.submit(lambda: {"seconds": 1}), "neox": pool.submit(lambda: release.wait(10))}
        world_mod._await_families(tmp_path, futures, {}, lambda msg: None, on_ready)
    assert heard == [("llama", True), ("neox", True)]
    assert json.loads((tmp_path / "data" / "leak_split.json").read_text())["leaked"] == [0, 2]


def test_a_failed_family_is_never_announced(tmp_path):
    heard: list[str] = []

    def boom():
        raise RuntimeError("diverged")

    with ThreadPoolExecutor(1) as pool:
        futures = {"llama": pool.submit(boom)}
        world_mod._await_families(tmp_path, futures, {}, lambda msg: None, heard.append)
    assert heard == [] and futures["llama"].exception() is not None


def test_waiting_for_the_last_family_sleeps_instead_of_spinning_on_the_finished_ones(tmp_path, monkeypatch):
    calls = []
    real_wait = world_mod.wait

    def counting_wait(fs, **kwargs):
        calls.append(len(fs))
        return real_wait(fs, **kwargs)

    monkeypatch.setattr(world_mod, "wait", counting_wait)
    monkeypatch.setattr(world_mod, "write_leak_split", lambda root, family: None)
    with ThreadPoolExecutor(2) as pool:
        futures = {"llama": pool.submit(lambda: {"seconds": 1}), "neox": pool.submit(time.sleep, 1.0)}
        world_mod._await_families(tmp_path, futures, {}, lambda msg: None, lambda stage: None)
    assert 1 <= len(calls) <= 4, calls[:5]  # a spinning loop calls wait thousands of times a second
