"""Per-cell result files: a versioned per-question Parquet table plus the raw responses.

The format is documented in :mod:`railsweep.results.schema` and
``docs/results-schema.md``. Names resolve lazily (as in :mod:`railsweep.miniworld`), so a module that
needs only :mod:`railsweep.atomic` (plain file writes) loads neither pandas nor pyarrow: the GPU
check's run, which writes a world's files, must not import them.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "CellPaths": "railsweep.results.io",
    "cell_paths": "railsweep.results.io",
    "find_cells": "railsweep.results.io",
    "read_cell": "railsweep.results.io",
    "read_metadata": "railsweep.results.io",
    "read_responses": "railsweep.results.io",
    "write_cell": "railsweep.results.io",
    "SCHEMA_VERSION": "railsweep.results.schema",
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'railsweep.results' has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)
