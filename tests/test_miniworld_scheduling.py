"""A world's build gives its longest family a core of its own when the families outnumber the cores; the others
yield their priority to it and the weights stay the same."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

from test_miniworld_world import TINY  # the tiny world config those tests build

from railsweep.miniworld import build_world
from railsweep.miniworld.scheduling import YIELD_NICE, family_niceness

MINI_WORK = {"llama": 900, "neox": 1100, "gemma": 800}  # the mini world's pretraining steps, in build order


def test_the_family_with_the_most_training_keeps_full_priority_when_families_outnumber_cores():
    assert family_niceness(MINI_WORK, cores=2) == {"llama": YIELD_NICE, "neox": 0, "gemma": YIELD_NICE}
    assert family_niceness(MINI_WORK, cores=1) == {"llama": YIELD_NICE, "neox": 0, "gemma": YIELD_NICE}


def test_every_family_keeps_full_priority_when_each_has_its_cores():
    assert family_niceness(MINI_WORK, cores=3) == dict.fromkeys(MINI_WORK, 0)
    assert family_niceness(MINI_WORK, cores=6, threads=2) == dict.fromkeys(MINI_WORK, 0)
    assert family_niceness(MINI_WORK, cores=4, threads=2)["llama"] == YIELD_NICE


def test_a_family_with_nothing_to_train_never_yields_and_the_first_of_equals_leads():
    assert family_niceness({"a": 0, "b": 5, "c": 5}, cores=1) == {"a": 0, "b": 0, "c": YIELD_NICE}
    assert family_niceness({"a": 0, "b": 5, "c": 0}, cores=1) == {"a": 0, "b": 0, "c": 0}


def test_yielding_priority_only_ever_lowers_it():
    code = (
        "from railsweep.miniworld.scheduling import yield_priority as y; import os; base = os.nice(0); "
        "print(y(base + 5) - base, y(base + 2) - base, y(0) - base)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["5", "5", "5"]


def test_a_build_on_one_core_trains_the_longest_family_at_full_priority(tmp_path, monkeypatch):
    monkeypatch.setattr("railsweep.miniworld.world.cores", lambda: 1)
    config = dataclasses.replace(TINY, families=("llama", "neox"), family_steps=(("llama", 2),))
    world = build_world("tiny2", cache_dir=tmp_path, config=config)
    training = world.manifest["training"]
    base = training["neox"]["nice"]  # the build's own niceness (0 unless the tests run under nice)
    assert {f: t["nice"] - base for f, t in training.items()} == {"llama": min(YIELD_NICE, 19 - base), "neox": 0}


def test_the_yielding_families_stay_below_a_niced_build_and_never_pass_19():
    assert family_niceness(MINI_WORK, cores=2, base=5) == {"llama": 15, "neox": 5, "gemma": 15}
    assert family_niceness(MINI_WORK, cores=2, base=15) == {"llama": 19, "neox": 15, "gemma": 19}
    assert family_niceness(MINI_WORK, cores=3, base=15) == dict.fromkeys(MINI_WORK, 15)


_ORPHAN_PARENT = """
import sys, time
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from railsweep.miniworld.scheduling import die_with_parent

def child_pid():
    import os
    return os.getpid()

if __name__ == "__main__":
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=die_with_parent)
    print(pool.submit(child_pid).result(), flush=True)
    pool.submit(time.sleep, 600)
    time.sleep(600)
"""


def test_a_build_worker_dies_with_its_killed_parent(tmp_path):
    import os
    import signal
    import time

    script = tmp_path / "parent.py"
    script.write_text(_ORPHAN_PARENT)
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)  # no clean-up in the parent: only the kernel can stop the worker
    parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{child}/stat") as stat:
            if stat.read().split(")")[-1].split()[0] == "Z":  # exited, waiting to be reaped
                return
        time.sleep(0.2)
    os.kill(child, signal.SIGKILL)
    raise AssertionError(f"worker {child} outlived its killed parent")
