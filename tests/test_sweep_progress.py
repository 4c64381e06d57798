"""The sweep's progress line (railsweep.sweep.run.progress): cells done of total, samples per second and an ETA
from the samples the running cells still have to decode."""

from __future__ import annotations

import io

import pytest

from railsweep.sweep.run.actors import ProgressBoard
from railsweep.sweep.run.progress import ProgressPrinter, duration, eta_seconds, format_line


def snap(samples: int, elapsed: float, done: int = 0, running: int = 0, resumed: int = 0) -> dict:
    return {"total": 7, "skipped": 1, "done": done, "running": running, "failed": 0, "samples": samples,
            "resumed": resumed, "samples_per_s": (samples - resumed) / elapsed, "elapsed_s": elapsed}  # fmt: skip


@pytest.mark.parametrize("seconds, text", [(0, "0s"), (42.4, "42s"), (185, "3m05s"), (3720, "1h02m")])
def test_durations_read_at_a_glance(seconds, text):
    assert duration(seconds) == text


def test_the_eta_is_the_samples_left_at_the_rate_since_the_block_started():
    start = snap(100, 50.0)  # an earlier wave decoded 100 samples in 50 s
    now = snap(400, 80.0)  # this block: 300 samples in 30 s, 10 samples/s
    assert eta_seconds(start, now, expected_samples=1000) == pytest.approx(70.0)
    assert eta_seconds(start, snap(100, 60.0), 1000) is None  # no sample yet: no rate, no ETA
    assert eta_seconds(start, snap(2000, 90.0), 1000) == 0.0  # more than priced: nothing left, not negative


def test_samples_read_back_on_resume_count_as_done_but_not_in_the_rate():
    start = snap(0, 1.0)
    now = snap(1300, 101.0, resumed=1000)  # 1,000 read back at once, then 300 decoded in 100 s: 3 samples/s
    assert eta_seconds(start, now, expected_samples=1600) == pytest.approx(100.0)
    assert eta_seconds(start, snap(1000, 11.0, resumed=1000), 1600) is None  # nothing decoded yet: no rate
    line = format_line(now)
    assert "1300 samples (1000 read back), 3.0 samples/s" in line


def test_the_board_keeps_read_back_samples_out_of_its_rate():
    board = ProgressBoard(total=2)
    board.add_resumed("a", 1000)
    board.add_samples("a", 30)
    s = board.snapshot()
    assert (s["samples"], s["resumed"]) == (1030, 1000)
    assert s["samples_per_s"] == pytest.approx(30 / s["elapsed_s"])


def test_the_line_shows_cells_done_of_total_and_the_eta():
    line = format_line(snap(300, 30.0, done=2, running=2), eta_s=185)
    assert line.startswith("[sweep] cells 3/7 done (1 skipped), 2 running, 0 failed, 2 queued |")
    assert line.endswith("300 samples, 10.0 samples/s, 30s, ETA 3m05s")
    assert "ETA" not in format_line(snap(300, 30.0))


class Board:
    """A progress board stand-in: snapshots in order (the printer polls it through ray.get)."""

    def __init__(self, snaps):
        self.snaps = list(snaps)


def test_the_printer_counts_the_eta_from_the_snapshot_it_started_at(monkeypatch):
    board = Board([snap(100, 50.0), snap(400, 80.0)])
    printer = ProgressPrinter(board, interval=3600, out=io.StringIO(), expected_samples=1000)
    monkeypatch.setattr(printer, "_poll", lambda: board.snaps.pop(0) if board.snaps else None)
    with printer:
        pass
    assert printer.out.getvalue().strip().endswith("ETA 1m10s")
