"""Per-cell result files: a versioned per-question Parquet table plus the raw responses.

The format is documented in :mod:`railsweep.results.schema` and
``docs/results-schema.md``.
"""

from railsweep.results.io import (
    CellPaths,
    cell_paths,
    find_cells,
    read_cell,
    read_metadata,
    read_responses,
    write_cell,
)
from railsweep.results.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "CellPaths",
    "cell_paths",
    "find_cells",
    "read_cell",
    "read_metadata",
    "read_responses",
    "write_cell",
]
