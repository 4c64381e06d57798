"""The on-disk results format, version 1: one per-question table per evaluated cell.

A cell ``<id>`` (``CellConfig.cell_id``) is two Parquet files in one directory: ``<id>.parquet``, one row per
question sorted by ``question_index`` (:data:`QUESTION_FIELDS`, plus strategy extras ``x_<name>``), and
``<id>.responses.parquet``, one row per decoded response (:data:`RESPONSE_FIELDS`); both carry ``railsweep.*``
key-value metadata (schema version, kind, cell id, the resolved cell, provenance and, for cells
:func:`railsweep.evaluate.evaluate_cell` writes, the grading record :class:`RuleAgreement`).
docs/results-schema.md describes every column and key. Readers refuse any other schema version; adding a column
or key is version 1 compatible only if readers may ignore it, anything else bumps :data:`SCHEMA_VERSION`.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from railsweep.errors import DataError

if TYPE_CHECKING:
    from railsweep.strategies.base import QuestionOutcome
    from railsweep.tasks.base import Question

SCHEMA_VERSION = 1

KEY_VERSION = "railsweep.schema_version"
KEY_KIND = "railsweep.kind"
KEY_CELL_ID = "railsweep.cell_id"
KEY_CELL = "railsweep.cell"
KEY_PROVENANCE = "railsweep.provenance"
KEY_GRADING = "railsweep.grading"

EXTRA_PREFIX = "x_"

QUESTION_FIELDS = (
    pa.field("question_index", pa.int64(), nullable=False),
    pa.field("leaked", pa.bool_()),
    pa.field("c", pa.int64(), nullable=False),
    pa.field("m", pa.int64(), nullable=False),
    pa.field("solve_prob", pa.float64(), nullable=False),
    pa.field("r01", pa.int64(), nullable=False),
    pa.field("n_strict", pa.int64(), nullable=False),
    pa.field("n_flexible", pa.int64(), nullable=False),
    pa.field("n_none", pa.int64(), nullable=False),
)

RESPONSE_FIELDS = (
    pa.field("question_index", pa.int64(), nullable=False),
    pa.field("sample_index", pa.int64(), nullable=False),
    pa.field("text", pa.string(), nullable=False),
    pa.field("token_ids", pa.list_(pa.int64()), nullable=False),
    pa.field("pred", pa.string()),
    pa.field("rule", pa.string()),
    pa.field("correct", pa.bool_()),
    pa.field("finish_reason", pa.string()),
    pa.field("triggers", pa.int64()),
)

GREEDY_SAMPLE_INDEX = -1
_EXTRA_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def metadata(kind: str, cell_id: str, cell: Mapping[str, Any], provenance: Mapping[str, Any],
             grading: Mapping[str, Any] | None = None) -> dict[bytes, bytes]:  # fmt: skip
    """The key-value metadata of a results file; ``grading`` is left out when None (a readers-may-ignore key)."""
    meta = {KEY_VERSION: str(SCHEMA_VERSION), KEY_KIND: kind, KEY_CELL_ID: cell_id,
            KEY_CELL: json.dumps(dict(cell), sort_keys=True),
            KEY_PROVENANCE: json.dumps(dict(provenance), sort_keys=True, default=str)}  # fmt: skip
    if grading is not None:
        meta[KEY_GRADING] = json.dumps(dict(grading), sort_keys=True)
    return {k.encode(): v.encode() for k, v in meta.items()}


def questions_table(outcomes: Sequence[QuestionOutcome], questions: Sequence[Question]) -> pa.Table:
    """Per-question rows (see module docstring); outcome indices must be distinct questions of ``questions``."""
    by_index = {q.index: q for q in questions}
    seen: set[int] = set()
    for o in outcomes:
        if o.index not in by_index:
            raise DataError(f"outcome for question_index={o.index} has no matching question")
        if o.index in seen:
            raise DataError(f"two outcomes for question_index={o.index}")
        seen.add(o.index)
        if not 0 <= o.c <= o.m:
            raise DataError(f"question_index={o.index}: need 0 <= c <= m, got c={o.c}, m={o.m}")
        if o.r01 not in (0, 1):
            raise DataError(f"question_index={o.index}: r01 must be 0 or 1, got {o.r01!r}")
    rows = sorted(outcomes, key=lambda o: o.index)
    cols: dict[str, list[Any]] = {
        "question_index": [o.index for o in rows],
        "leaked": [by_index[o.index].leaked for o in rows],
        "c": [o.c for o in rows],
        "m": [o.m for o in rows],
        "solve_prob": [o.solve_prob for o in rows],
        "r01": [int(o.r01) for o in rows],
        **{f"n_{rule}": [sum(g.rule == rule for g in o.grades) for o in rows]
           for rule in ("strict", "flexible", "none")},
    }
    fields = list(QUESTION_FIELDS)
    for name in sorted({k for o in rows for k in o.extras}):
        if not _EXTRA_NAME.match(name):
            raise DataError(f"strategy extra name must be an identifier, got {name!r}")
        values = [o.extras.get(name) for o in rows]
        as_int = all(v is None or isinstance(v, numbers.Integral) for v in values)  # bool, int, np.int64
        typ = pa.int64() if as_int else pa.float64()
        cols[EXTRA_PREFIX + name] = [None if v is None else (int(v) if as_int else float(v)) for v in values]
        fields.append(pa.field(EXTRA_PREFIX + name, typ))
    return pa.Table.from_pydict(cols, schema=pa.schema(fields))


def responses_table(outcomes: Sequence[QuestionOutcome]) -> pa.Table:
    """One row per sample (and per greedy trajectory, as sample_index -1)."""
    rows: list[tuple[Any, ...]] = []  # in RESPONSE_FIELDS' order
    for o in sorted(outcomes, key=lambda o: o.index):
        if len(o.grades) != len(o.samples):
            raise DataError(f"question_index={o.index}: {len(o.samples)} samples but {len(o.grades)} grades")
        graded = [(GREEDY_SAMPLE_INDEX, o.greedy, None)] if o.greedy is not None else []
        for i, smp, g in graded + [(i, smp, g) for i, (smp, g) in enumerate(zip(o.samples, o.grades))]:
            rows.append((o.index, i, smp.text, [int(t) for t in smp.token_ids], g.pred if g else None,
                         g.rule if g else None, bool(g.correct) if g else None, smp.finish_reason,
                         int(smp.triggers)))  # fmt: skip
    cols = {f.name: [r[k] for r in rows] for k, f in enumerate(RESPONSE_FIELDS)}
    return pa.Table.from_pydict(cols, schema=pa.schema(list(RESPONSE_FIELDS)))


def check_metadata(meta: Mapping[bytes, bytes] | None, kind: str, source: str) -> dict[str, Any]:
    """A file's checked metadata: ``{"cell", "provenance", "cell_id", "grading"}`` (grading may be None)."""
    meta = meta or {}
    if (raw := meta.get(KEY_VERSION.encode())) is None:
        raise DataError(f"{source}: not a railsweep results file (no {KEY_VERSION!r} metadata)")
    version = raw.decode(errors="replace")
    if version != str(SCHEMA_VERSION):
        raise DataError(f"{source}: unsupported results schema version {version!r}; this railsweep reads "
                        f"version {SCHEMA_VERSION}")  # fmt: skip
    got_kind = meta.get(KEY_KIND.encode(), b"").decode(errors="replace")
    if got_kind != kind:
        raise DataError(f"{source}: expected a {kind!r} results file, got kind {got_kind!r}")
    try:
        cell = json.loads(meta[KEY_CELL.encode()])
        provenance = json.loads(meta.get(KEY_PROVENANCE.encode(), b"{}"))
        cell_id = meta[KEY_CELL_ID.encode()].decode()
        grading = json.loads(meta[KEY_GRADING.encode()]) if KEY_GRADING.encode() in meta else None
    except (KeyError, ValueError) as e:
        raise DataError(f"{source}: malformed railsweep metadata: {e}") from e
    return {"cell": cell, "provenance": provenance, "cell_id": cell_id, "grading": grading}


def check_columns(schema: pa.Schema, expected: Sequence[pa.Field], source: str, *, extras: bool) -> None:
    """Every expected column present with its type; extra columns only as ``x_<name>`` numbers when allowed."""
    for f in expected:
        idx = schema.get_field_index(f.name)
        if idx < 0:
            raise DataError(f"{source}: missing column {f.name!r}")
        if not schema.field(idx).type.equals(f.type):
            raise DataError(f"{source}: column {f.name!r} has type {schema.field(idx).type}, expected "
                            f"{f.type}")  # fmt: skip
    known = {f.name for f in expected}
    for f in schema:
        if f.name in known:
            continue
        if not (extras and f.name.startswith(EXTRA_PREFIX)):
            raise DataError(f"{source}: unexpected column {f.name!r}")
        if not (pa.types.is_integer(f.type) or pa.types.is_floating(f.type)):
            raise DataError(f"{source}: extra column {f.name!r} must be numeric, got {f.type}")
