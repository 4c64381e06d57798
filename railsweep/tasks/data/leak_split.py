"""Reading a leak split, which test questions a contaminated model saw: ``{"leaked": [test indices], ...}``,
the task's question indices on its test split (``Question.leaked``)."""

from __future__ import annotations

from pathlib import Path

from railsweep.errors import DataError
from railsweep.tasks.data.text import existing_file, parse_json, read_utf8


def read_leak_split(path: str | Path | None, n_total: int) -> frozenset[int] | None:
    """The leaked test indices from ``{"leaked": [...], ...}``, each in ``[0, n_total)``; None: no split."""
    if path is None:
        return None
    path = existing_file(path, "leak split")
    data = parse_json(read_utf8(path), path)
    leaked = data.get("leaked") if isinstance(data, dict) else None
    if not isinstance(leaked, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in leaked):
        raise DataError(f"{path}: expected an object with 'leaked': a list of integer test indices")
    bad = sorted(i for i in leaked if not 0 <= i < n_total)
    if bad:
        raise DataError(f"{path}: leaked indices out of range [0, {n_total}): {bad[:10]}")
    return frozenset(leaked)
