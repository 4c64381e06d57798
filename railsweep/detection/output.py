"""The detection table on disk: ``detections.parquet``, schema version 1, written atomically.

One row per item per detector setting (:data:`railsweep.detection.run.COLUMNS` plus ``x_<name>`` float
extras); key-value metadata ``railsweep.detection_schema_version`` (``"1"``), ``railsweep.kind``
(``"detections"``), ``railsweep.detection`` (JSON: detectors, configs, inputs), ``railsweep.provenance``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from railsweep.atomic import write_atomic
from railsweep.errors import DataError

SCHEMA_VERSION = 1
KEY_VERSION = "railsweep.detection_schema_version"
KEY_KIND = "railsweep.kind"
KEY_RUN = "railsweep.detection"
KEY_PROVENANCE = "railsweep.provenance"
FILENAME = "detections.parquet"


def write_detections(out_dir: str | Path, table: pd.DataFrame, run: Mapping[str, Any],
                     provenance: Mapping[str, Any]) -> Path:  # fmt: skip
    """Write ``<out_dir>/detections.parquet`` (see the module docstring); returns its path."""
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    arrow = arrow.replace_schema_metadata({
        KEY_VERSION: str(SCHEMA_VERSION), KEY_KIND: "detections",
        KEY_RUN: json.dumps(dict(run), sort_keys=True, default=str),
        KEY_PROVENANCE: json.dumps(dict(provenance), sort_keys=True, default=str),
    })  # fmt: skip
    return write_atomic(Path(out_dir) / FILENAME, lambda tmp: pq.write_table(arrow, tmp))


def read_detections(path: str | Path) -> pd.DataFrame:
    """A detections file (a directory means its ``detections.parquet``); other schema versions refused."""
    p = Path(path)
    if p.is_dir():
        p = p / FILENAME
    if not p.is_file():
        raise DataError(f"detections file not found: {p}")
    meta = pq.read_schema(p).metadata or {}
    version = meta.get(KEY_VERSION.encode(), b"").decode()
    if version != str(SCHEMA_VERSION):
        raise DataError(f"{p}: detection schema version {version or 'missing'!r}, expected {SCHEMA_VERSION}")
    return pq.read_table(p).to_pandas()
