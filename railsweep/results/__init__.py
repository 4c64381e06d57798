"""Per-cell result files: a versioned per-question Parquet table plus the raw responses.

The format: :mod:`railsweep.results.schema`. Names resolve lazily, so that the GPU check's run, which writes
a world's files, loads neither pandas nor pyarrow.
"""

from __future__ import annotations

import importlib
from typing import Any

_IO = ("CellPaths", "cell_paths", "find_cells", "read_cell", "read_metadata", "read_responses", "write_cell")
_NAMES = {**dict.fromkeys(_IO, "railsweep.results.io"), "SCHEMA_VERSION": "railsweep.results.schema"}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'railsweep.results' has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)
