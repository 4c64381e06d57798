"""bench/sweep_utilisation.py: processes sorted into sweep roles by Ray's titles, cores busy summarised over a window,
idle core-seconds counted against the CPUs Ray was given, and bad options refused before anything starts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import sweep_utilisation as bench  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


class _Proc:
    def __init__(self, pid: int, title: str):
        self.pid, self._title = pid, title

    def cmdline(self) -> list[str]:
        return self._title.split()


@pytest.mark.parametrize(
    "title, role",
    [
        ("ray::EngineServer.run_cell", "engines"),
        ("ray::EngineServer", "engines"),
        ("ray::ImplicitFunc.train", "trials"),
        ("/venv/bin/python3 /venv/bin/mlflow server --port 5000", "mlflow"),
        ("/ray/core/src/ray/raylet/raylet --node-ip-address=127.0.0.1", "ray"),
        ("ray::IDLE", "ray"),
    ],
)
def test_processes_are_sorted_into_sweep_roles_by_their_ray_titles(title, role):
    assert bench.role_of(_Proc(7, title), me=1) == role
    assert bench.role_of(_Proc(1, title), me=1) == "driver"


def _row(t, engines, trials=0.0, machine=2.0):
    return {"t": t, "engines": engines, "trials": trials, "ray": 0.0, "mlflow": 0.0, "driver": 0.0, "machine": machine}


def test_summary_counts_the_cores_the_sweep_left_idle_inside_the_window_only():
    rows = [_row(0.5, 2.0), _row(1.5, 1.0, 0.5), _row(2.5, 0.25), _row(9.0, 0.0)]
    s = bench.summarise(rows, start=1.0, end=3.0, cores=2, interval=1.0)
    assert s["rows"] == 2
    assert s["mean_engines"] == pytest.approx(0.625) and s["mean_sweep"] == pytest.approx(0.875)
    assert s["idle_core_s"] == pytest.approx((2 - 1.5) + (2 - 0.25))
    full = bench.summarise([_row(1.0, 3.0)], start=0.0, end=2.0, cores=2, interval=1.0)
    assert full["idle_core_s"] == 0.0  # more busy than given (other work on the node) is not negative idle
    assert bench.summarise(rows, start=20.0, end=30.0, cores=2, interval=1.0)["rows"] == 0


@pytest.mark.parametrize("option, message", [(["--interval", "0"], "--interval 0: must be > 0 seconds"),
                                             (["--num-cpus", "0"], "--num-cpus 0: must be >= 1")])  # fmt: skip
def test_bad_options_are_refused_with_one_line_and_exit_2_before_anything_starts(option, message):
    r = subprocess.run([sys.executable, str(REPO / "bench" / "sweep_utilisation.py"), *option],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"railsweep: error: {message}\n")
