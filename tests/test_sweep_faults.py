"""The fault-injection test hook (railsweep.sweep.run.faults): parsed strictly, inert unless set, fired by the
progress board exactly once, on the k-th finished cell, whatever else the board is told."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from railsweep.errors import ConfigError
from railsweep.sweep.run.actors import ProgressBoard
from railsweep.sweep.run.faults import ENV_VAR, Fault, fault_from_env

REPO = Path(__file__).resolve().parents[1]


class _Recorder(Fault):
    """A fault that records when it fires instead of killing anything."""

    def fire(self) -> None:
        fired.append(self.after_cells)


fired: list[int] = []


@pytest.fixture(autouse=True)
def _clear():
    fired.clear()


def test_unset_or_empty_hook_means_no_fault():
    assert fault_from_env({}) is None
    assert fault_from_env({ENV_VAR: "  "}) is None


def test_hook_value_names_the_kind_and_the_finished_cell_count():
    assert fault_from_env({ENV_VAR: "kill-driver:2"}) == Fault("kill-driver", 2)
    assert fault_from_env({ENV_VAR: "kill-engine:1"}) == Fault("kill-engine", 1)
    assert fault_from_env({ENV_VAR: "interrupt-driver:3"}) == Fault("interrupt-driver", 3)


@pytest.mark.parametrize("raw", ["kill-driver", "kill-driver:0", "kill-driver:-1", "kill-driver:x",
                                 "kill-engines:1", "kill-engine:1.5", ":3"])  # fmt: skip
def test_malformed_hook_values_are_refused_with_the_value_named(raw):
    with pytest.raises(ConfigError, match=f"{ENV_VAR}={raw!r} is not a fault"):
        fault_from_env({ENV_VAR: raw})


def test_board_fires_once_on_the_kth_distinct_finished_cell_only():
    board = ProgressBoard(total=5, fault=_Recorder("kill-engine", 3))
    for cid, state in [("a", "running"), ("a", "done"), ("b", "running"), ("b", "failed"), ("a", "done"),
                       ("b", "running"), ("b", "done")]:  # fmt: skip
        board.set_state(cid, state)
    assert fired == []  # two distinct cells done; a repeated "done" and a failure do not count
    board.set_state("c", "done")
    assert fired == [3]
    board.set_state("d", "done")
    board.set_state("e", "done")
    assert fired == [3]  # once
    assert board.snapshot()["done"] == 5


def test_board_without_a_fault_counts_cells_as_before():
    board = ProgressBoard(total=2, skipped=1)
    board.set_state("a", "done")
    board.set_state("b", "running")
    s = board.snapshot()
    assert (s["done"], s["running"], s["skipped"]) == (1, 1, 1)


def test_armed_fault_carries_the_driver_pid_and_engine_names_to_the_board():
    armed = Fault("kill-engine", 1).arm(driver_pid=123, engines=("engine-x-llama-0",))
    assert (armed.kind, armed.after_cells, armed.driver_pid, armed.engines) == ("kill-engine", 1, 123, ("engine-x-llama-0",))


def test_sweep_job_refuses_a_malformed_hook_with_one_line_and_exit_2_before_ray():
    r = subprocess.run([sys.executable, "-m", "railsweep.sweep.job", "--preset", "smoke"], capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO), ENV_VAR: "kill-driver:0"})  # fmt: skip
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"railsweep: error: {ENV_VAR}='kill-driver:0' is not a fault; the test hook takes KIND:K with KIND one "
        "of kill-driver, interrupt-driver, kill-engine and K >= 1 finished cells"
    )
    assert "Started a local Ray instance" not in r.stdout + r.stderr


@pytest.mark.parametrize("kind, signum", [("kill-driver", signal.SIGKILL), ("interrupt-driver", signal.SIGINT)])
def test_a_driver_fault_sends_its_signal_to_the_armed_pid(kind, signum):
    victim = subprocess.Popen(["sleep", "120"])
    try:
        Fault(kind, 1).arm(driver_pid=victim.pid, engines=()).fire()
        assert victim.wait(timeout=30) == -signum
    finally:
        if victim.poll() is None:
            victim.kill()


@pytest.mark.slow
def test_board_on_ray_kills_the_named_engines_which_restart_and_sigkills_the_armed_driver(ray_client):
    """The hook through real Ray actors: the board reached by ``.remote`` calls, as trials reach it."""
    from railsweep.sweep.run.actors import ENGINE_NAMESPACE, create_progress_board

    class Engine:  # defined here, so Ray ships it by value
        def pid(self) -> int:
            return os.getpid()

    ray = ray_client
    name = f"engine-faults-test-{os.getpid()}"
    engine = ray.remote(Engine).options(
        name=name, namespace=ENGINE_NAMESPACE, max_restarts=1, max_task_retries=-1, num_cpus=0
    ).remote()
    first = ray.get(engine.pid.remote(), timeout=300)
    board = create_progress_board(3, 0, Fault("kill-engine", 2).arm(driver_pid=os.getpid(), engines=(name,)))
    ray.get([board.set_state.remote("a", "done"), board.set_state.remote("a", "done")], timeout=60)
    assert ray.get(engine.pid.remote(), timeout=300) == first  # one distinct cell done: not yet
    ray.get(board.set_state.remote("b", "done"), timeout=60)
    deadline = time.monotonic() + 300  # ray.kill is asynchronous: calls may still reach the old process a moment
    while (pid := ray.get(engine.pid.remote(), timeout=300)) == first and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pid != first  # killed, restarted by Ray under the same name
    ray.kill(engine, no_restart=True)

    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        board = create_progress_board(1, 0, Fault("kill-driver", 1).arm(driver_pid=victim.pid, engines=()))
        ray.get(board.set_state.remote("a", "done"), timeout=60)
        assert victim.wait(timeout=60) == -9
    finally:
        if victim.poll() is None:
            victim.kill()


def test_the_sweep_job_hears_sigint_even_where_its_parent_ignored_it(monkeypatch):
    """A Ray head started from a background shell hands its jobs SIGINT ignored: the job restores the handler."""
    from railsweep.sweep import job

    monkeypatch.setenv(ENV_VAR, "kill-driver:0")  # refused at once: the job exits 2 before Ray
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert job.main(["--preset", "smoke"]) == 2
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
