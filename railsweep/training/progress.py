"""A training loop's progress, readable from another process: optimiser steps done out of the total.

A :class:`StepReport` is picklable (it travels to a world build's worker processes); called as ``report(0,
total)`` before the first optimiser step (``report(first, total)`` when a run resumes at step ``first``) and
``report(done, total)`` after each, it writes ``{"done", "total", "first", "start", "time", "cpu"}`` as JSON to its path (``cpu``: the CPU seconds the process has spent since the first
call, so a reader can tell work from waiting), atomically, at most every :data:`EVERY_S` seconds and always at
the first and last call. :func:`read_report` reads one back.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from railsweep.atomic import write_text_atomic

EVERY_S = 5.0


@dataclass
class StepReport:
    path: Path
    start: float | None = None
    _written: float = 0.0
    _cpu_start: float = 0.0
    _first: int = 0

    def __call__(self, done: int, total: int) -> None:
        now = time.time()
        if self.start is None:
            self.start, self._cpu_start, self._first = now, time.process_time(), done
        elif done < total and now - self._written < EVERY_S:
            return
        self._written = now
        self.path.parent.mkdir(parents=True, exist_ok=True)
        cpu = time.process_time() - self._cpu_start
        record = {"done": done, "total": total, "first": self._first, "start": self.start, "time": now, "cpu": cpu}
        write_text_atomic(self.path, json.dumps(record) + "\n")


def read_report(path: Path) -> dict | None:
    """The last record a :class:`StepReport` wrote to ``path``; None when none is there yet."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
