"""Rows of a task's data file (JSONL, JSON, CSV or Parquet) or of a hub dataset, each a plain ``dict`` in file
order; a file that is missing, malformed or not UTF-8 raises :class:`~railsweep.errors.DataError`."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from railsweep.errors import DataError
from railsweep.tasks.data.text import existing_file, json_lines, parse_json, read_utf8

FORMATS = ("jsonl", "json", "csv", "parquet")
_SUFFIXES = {".jsonl": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


def format_of(path: str | Path, declared: str | None = None) -> str | None:
    """The declared format, else the one the file name's suffix says; None when neither says."""
    return declared or _SUFFIXES.get(Path(str(path)).suffix.lower())


def read_rows(path: str | Path, fmt: str) -> list[dict[str, Any]]:
    """The rows of ``path`` read as ``fmt`` (one of :data:`FORMATS`; ``json`` is one JSON list of objects)."""
    path = existing_file(path, "task data")
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist()
        except Exception as e:  # pyarrow raises several types for a file that is not Parquet
            raise DataError(f"{path}: not a readable Parquet file ({type(e).__name__}: {e})") from e
    text = read_utf8(path)
    if fmt == "csv":
        return [dict(r) for r in csv.DictReader(io.StringIO(text, newline=""))]
    if fmt == "json":
        data = parse_json(text, path)
        if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
            raise DataError(f"{path}: expected a JSON list of objects")
        return data
    rows = []
    for lineno, row in json_lines(path, text):
        if not isinstance(row, dict):
            raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows


def read_hub(dataset: str, config: str | None, split: str) -> list[dict[str, Any]]:
    """A hub dataset's split as rows, loaded with ``datasets``; offline or refused -> DataError."""
    import datasets  # lazy: heavy, and only needed for a task file that names a hub dataset

    try:
        ds = datasets.load_dataset(dataset, config, split=split)
    except Exception as e:  # offline, unknown split, hub errors: all mean "no data"
        raise DataError(
            f"could not load hub dataset {dataset!r} (config {config!r}, split {split!r}): {type(e).__name__}: {e}"
        ) from e
    return [dict(r) for r in ds]
