"""Live sweep progress: cells done / running / failed, samples per second and the time left.

A thread in the driver polls the progress board: a tqdm bar on a terminal, elsewhere one line every
``interval`` seconds. The ETA is the samples the running block has left to decode at its rate so far. Samples
read back from a killed try's checkpoints (``--resume``) count as done but not in the rate: they took no time.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO


def format_line(s: dict[str, Any], eta_s: float | None = None) -> str:
    left = s["total"] - s["skipped"] - s["done"] - s["running"] - s["failed"]
    eta = "" if eta_s is None else f", ETA {duration(eta_s)}"
    resumed = f" ({s['resumed']} read back)" if s.get("resumed") else ""
    return (f"[sweep] cells {s['done'] + s['skipped']}/{s['total']} done ({s['skipped']} skipped), "
            f"{s['running']} running, {s['failed']} failed, {max(left, 0)} queued | {s['samples']} samples{resumed}, "
            f"{s['samples_per_s']:.1f} samples/s, {s['elapsed_s']:.0f}s{eta}")  # fmt: skip


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    s = max(int(round(seconds)), 0)
    if s < 60:
        return f"{s}s"
    return f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s // 3600}h{s % 3600 // 60:02d}m"


def eta_seconds(start: dict[str, Any], now: dict[str, Any], expected_samples: int) -> float | None:
    """Seconds left to decode ``expected_samples`` from the snapshot ``start`` on, at the decode rate since then."""
    done = now["samples"] - start["samples"]
    decoded = done - (now.get("resumed", 0) - start.get("resumed", 0))
    spent = now["elapsed_s"] - start["elapsed_s"]
    return None if decoded <= 0 or spent <= 0 else max(expected_samples - done, 0) / (decoded / spent)


class ProgressPrinter:
    """Context manager: poll the board every ``interval`` s until the block exits."""

    def __init__(self, board: Any, interval: float = 10.0, out: TextIO = sys.stdout,
                 expected_samples: int | None = None):  # fmt: skip
        self.board = board
        self.interval = interval
        self.out = out
        self.expected_samples = expected_samples  # of the cells this block runs: the line's ETA
        self._start: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None

    def _poll(self) -> dict[str, Any] | None:
        import ray

        try:
            return ray.get(self.board.snapshot.remote(), timeout=30)
        except Exception:
            return None

    def _show(self, s: dict[str, Any]) -> None:
        if self._bar is not None:
            self._bar.total = s["total"]
            self._bar.n = s["done"] + s["skipped"]
            self._bar.set_postfix_str(f"running={s['running']} failed={s['failed']} {s['samples_per_s']:.1f} "
                                      "samples/s")  # fmt: skip
        else:
            eta = None
            if self.expected_samples is not None and self._start is not None:
                eta = eta_seconds(self._start, s, self.expected_samples)
            print(format_line(s, eta), file=self.out, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            if (s := self._poll()) is not None:
                self._show(s)

    def __enter__(self) -> ProgressPrinter:
        if self.expected_samples is not None:
            self._start = self._poll()
        if getattr(self.out, "isatty", lambda: False)():
            from tqdm import tqdm

            self._bar = tqdm(total=0, unit="cell", file=self.out, desc="sweep")
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if (s := self._poll()) is not None:
            self._show(s)
        if self._bar is not None:
            self._bar.close()
