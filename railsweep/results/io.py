"""Write and read one cell's result files, atomically and with schema checks.

Writing follows these steps, so a reader never sees half a cell:
1. build both Arrow tables in memory (all validation happens here);
2. write each to a temporary name in the destination directory and fsync it;
3. rename the responses file into place, then the per-question file (the commit marker);
4. fsync the directory. On any error every file written in this call is removed (and a directory it made).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from railsweep import provenance as prov
from railsweep.argtypes import check_writable_dir  # noqa: F401  (re-exported: callers import it from here)
from railsweep.atomic import write_all_atomic
from railsweep.config import CellConfig
from railsweep.errors import DataError
from railsweep.results import schema

if TYPE_CHECKING:
    from railsweep.strategies.base import QuestionOutcome
    from railsweep.tasks.base import Question

RESPONSES_SUFFIX = ".responses.parquet"


@dataclass(frozen=True)
class CellPaths:
    questions: Path  # <cell_id>.parquet
    responses: Path  # <cell_id>.responses.parquet


@dataclass(frozen=True)
class CellTables:
    """A cell's two tables as its files hold them (metadata included)."""

    questions: pa.Table
    responses: pa.Table


def cell_paths(out_dir: str | Path, cell_id: str) -> CellPaths:
    out = Path(out_dir)
    return CellPaths(out / f"{cell_id}.parquet", out / f"{cell_id}{RESPONSES_SUFFIX}")


def find_cells(out_dir: str | Path) -> list[Path]:
    """The per-question files of every complete cell in ``out_dir`` (temporaries and responses excluded), sorted."""
    out = Path(out_dir)
    if not out.is_dir():
        raise DataError(f"results directory not found: {out}")
    return sorted(p for p in out.glob("*.parquet")
                  if not p.name.startswith(".") and not p.name.endswith(RESPONSES_SUFFIX))


def write_cell(out_dir: str | Path, cell: CellConfig, outcomes: Sequence[QuestionOutcome],
               questions: Sequence[Question], *, provenance: Mapping[str, Any] | None = None,
               grading: Mapping[str, Any] | None = None) -> CellPaths:  # fmt: skip
    """Write the cell's per-question and responses Parquet files; returns their paths. ``provenance`` defaults
    to :func:`railsweep.provenance.collect` over the cell's data files; ``grading`` (the answer rules' counts)
    goes into both files' metadata when given."""
    return write_tables(out_dir, cell.cell_id, cell_tables(cell, outcomes, questions, provenance, grading))


def cell_tables(cell: CellConfig, outcomes: Sequence[QuestionOutcome], questions: Sequence[Question],
                provenance: Mapping[str, Any] | None = None,
                grading: Mapping[str, Any] | None = None) -> CellTables:  # fmt: skip
    """Step 1 of :func:`write_cell`: both Arrow tables, checked, with their metadata."""
    q_table = schema.questions_table(outcomes, questions)
    r_table = schema.responses_table(outcomes)
    if provenance is None:
        provenance = prov.collect(cell.task_files())
    cell_dict = cell.to_dict()
    meta = {kind: schema.metadata(kind, cell.cell_id, cell_dict, provenance, grading)
            for kind in ("questions", "responses")}
    return CellTables(q_table.replace_schema_metadata(meta["questions"]),
                      r_table.replace_schema_metadata(meta["responses"]))  # fmt: skip


def write_tables(out_dir: str | Path, cell_id: str, tables: CellTables) -> CellPaths:
    """Steps 2-4 of :func:`write_cell`: ``tables`` written as cell ``cell_id``'s two files in ``out_dir``."""
    q_table, r_table = tables.questions, tables.responses
    out = Path(out_dir)
    paths = cell_paths(out, cell_id)
    # responses first: a questions file is only ever seen beside its responses
    write_all_atomic({
        paths.responses: lambda tmp: _write_synced(r_table, tmp),
        paths.questions: lambda tmp: _write_synced(q_table, tmp),
    })  # fmt: skip
    _fsync_dir(out)
    return paths


def _write_synced(table: pa.Table, path: Path) -> None:
    with open(path, "wb") as f:
        pq.write_table(table, f)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # directories cannot be opened on some platforms
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _read_table(path: str | Path, read: Any = pq.read_table) -> Any:
    """``read(path)`` (the table, or ``pq.read_schema``), a missing or unreadable file a DataError."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"results file not found: {p}")
    try:
        return read(p)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"{p}: not a readable Parquet file: {e}") from e


def read_metadata(path: str | Path, kind: str = "questions") -> dict[str, Any]:
    """``{"cell": CellConfig, "cell_id", "provenance", "grading"}`` of a results file, schema-checked."""
    info = schema.check_metadata(_read_table(path, pq.read_schema).metadata, kind, str(Path(path)))
    info["cell"] = CellConfig.from_dict(info["cell"])
    return info


def read_cell(path: str | Path) -> tuple[CellConfig, pd.DataFrame]:
    """A per-question file's CellConfig and table; anything off raises a DataError naming the file."""
    p = Path(path)
    if p.name.endswith(RESPONSES_SUFFIX):
        raise DataError(f"{p}: this is a responses file; pass the per-question file "
                        f"{p.name[: -len(RESPONSES_SUFFIX)]}.parquet")
    table = _read_table(p)
    info = schema.check_metadata(table.schema.metadata, "questions", str(p))
    schema.check_columns(table.schema, schema.QUESTION_FIELDS, str(p), extras=True)
    cell = CellConfig.from_dict(info["cell"])
    df = questions_frame(table)
    if df["question_index"].duplicated().any():
        dup = df.loc[df["question_index"].duplicated(), "question_index"].tolist()[:10]
        raise DataError(f"{p}: duplicated question_index values {dup}")
    return cell, df


def questions_frame(table: pa.Table) -> pd.DataFrame:
    """A per-question table as :func:`read_cell` returns it: ``leaked`` as pandas' nullable ``boolean``."""
    df = table.to_pandas()
    df["leaked"] = df["leaked"].astype("boolean")
    return df


def read_responses(path: str | Path) -> pd.DataFrame:
    """Load a ``<cell>.responses.parquet`` file (schema-checked); also accepts the per-question path."""
    p = Path(path)
    if not p.name.endswith(RESPONSES_SUFFIX) and p.suffix == ".parquet":
        p = p.with_name(p.name[: -len(".parquet")] + RESPONSES_SUFFIX)
    table = _read_table(p)
    schema.check_metadata(table.schema.metadata, "responses", str(p))
    schema.check_columns(table.schema, schema.RESPONSE_FIELDS, str(p), extras=False)
    return table.to_pandas()
