"""Live sweep progress: cells done / running / failed and samples per second.

A background thread in the driver polls the :class:`~railsweep.sweep.actors.ProgressBoard`
actor. On a terminal it draws a tqdm bar; elsewhere (``ray job`` logs, files)
it prints one line every ``interval`` seconds, which stays readable in logs.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO


def format_line(s: dict[str, Any]) -> str:
    left = s["total"] - s["skipped"] - s["done"] - s["running"] - s["failed"]
    return (
        f"[sweep] cells {s['done'] + s['skipped']}/{s['total']} done ({s['skipped']} skipped), "
        f"{s['running']} running, {s['failed']} failed, {max(left, 0)} queued | "
        f"{s['samples']} samples, {s['samples_per_s']:.1f} samples/s, {s['elapsed_s']:.0f}s"
    )


class ProgressPrinter:
    """Context manager: poll the board every ``interval`` s until the block exits."""

    def __init__(self, board: Any, interval: float = 10.0, out: TextIO = sys.stdout):
        self.board = board
        self.interval = interval
        self.out = out
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
            self._bar.set_postfix_str(
                f"running={s['running']} failed={s['failed']} {s['samples_per_s']:.1f} samples/s"
            )
        else:
            print(format_line(s), file=self.out, flush=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            s = self._poll()
            if s is not None:
                self._show(s)

    def __enter__(self) -> ProgressPrinter:
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
        s = self._poll()
        if s is not None:
            self._show(s)
        if self._bar is not None:
            self._bar.close()
