"""Streaming a training corpus of any size from JSONL, Parquet or plain-text files, in chunks.

A chunk is a list of texts and whether its last text ends a document. JSONL and Parquet hold one document
per record; a text file is one running document, read in blocks of about ``chunk_chars`` characters cut
at whitespace. Only the current chunk is held in memory. A record's text is its ``text_field`` (missing
-> DataError), else its ``text``, else its string values joined by newlines (GSM8K rows read as question
+ solution).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from railsweep.errors import DataError
from railsweep.tasks.data.text import check_utf8

JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)
TEXT_SUFFIXES = (".txt", ".text", ".md")


@dataclass(frozen=True)
class Chunk:
    texts: list[str]
    boundary: bool  # the last text ends a document


def check_corpus_paths(paths: Sequence[str | Path]) -> list[Path]:
    """The corpus files, checked before any work: at least one, each present, non-empty, of a known kind."""
    if not paths:
        raise DataError("the corpus is empty: no corpus files given (--corpus FILE ...)")
    out = []
    kinds = JSONL_SUFFIXES + PARQUET_SUFFIXES + TEXT_SUFFIXES
    for p in map(Path, paths):
        if not p.is_file():
            raise DataError(f"corpus file not found: {p}")
        if p.suffix.lower() not in kinds:
            known = ", ".join(kinds)
            raise DataError(f"corpus file {p}: unknown kind {p.suffix!r} (known: {known})")
        if p.stat().st_size == 0:
            raise DataError(f"corpus file {p} is empty")
        if p.suffix.lower() in JSONL_SUFFIXES + TEXT_SUFFIXES:
            check_utf8(p)  # before any model loads: a detector reading the corpus later must not fail
        out.append(p)
    return out


def _record_text(rec, where: str, field: str | None) -> str:
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected a JSON object per record, got {type(rec).__name__}")
    if field is not None:
        if not isinstance(rec.get(field), str):
            raise DataError(f"{where}: no string field {field!r} in the record")
        return rec[field]
    if isinstance(rec.get("text"), str):
        return rec["text"]
    return "\n".join(v for v in rec.values() if isinstance(v, str))


def jsonl_text(line: str, where: str, field: str | None) -> str | None:
    """The text of one JSONL line (None for a blank line); ``where`` names it in errors."""
    if not line.strip():
        return None
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise DataError(f"{where}: not valid JSON ({e.msg})") from e
    return _record_text(rec, where, field)


def _jsonl(path: Path, field: str | None, chunk_chars: int) -> Iterator[Chunk]:
    texts: list[str] = []
    size = 0
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            text = jsonl_text(line, f"{path}:{lineno}", field)
            if text is None:
                continue
            texts.append(text)
            size += len(text)
            if size >= chunk_chars:
                yield Chunk(texts, True)
                texts, size = [], 0
    if texts:
        yield Chunk(texts, True)


def _parquet_file(path: Path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise DataError(f"{path}: not a readable Parquet file: {e}") from e


def parquet_text_columns(path: Path, field: str | None, pf=None) -> list[str]:
    """The columns a Parquet file's text is read from: ``field``, else ``text``, else every string column."""
    import pyarrow as pa

    pf = pf or _parquet_file(path)
    names = [
        f.name for f in pf.schema_arrow if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    if field is not None:
        if field not in names:
            raise DataError(f"{path}: no string column {field!r} (string columns: {names})")
        return [field]
    columns = ["text"] if "text" in names else names
    if not columns:
        raise DataError(f"{path}: no string column to read text from")
    return columns


def row_texts(cols: Sequence[Sequence[str | None]]) -> list[str]:
    """One text per row of the columns ``cols``: the row's non-null values joined by newlines."""
    return ["\n".join(v for v in row if v is not None) for row in zip(*cols)]


def _parquet(path: Path, field: str | None, chunk_chars: int) -> Iterator[Chunk]:
    pf = _parquet_file(path)
    columns = parquet_text_columns(path, field, pf)
    for batch in pf.iter_batches(batch_size=max(1, chunk_chars // 512), columns=columns):
        texts = row_texts([batch.column(c).to_pylist() for c in columns])
        if texts:
            yield Chunk(texts, True)


def _text(path: Path, chunk_chars: int) -> Iterator[Chunk]:
    carry = ""
    with open(path, encoding="utf-8") as f:
        while True:
            block = f.read(chunk_chars)
            if not block:
                break
            block = carry + block
            cut = max(block.rfind(" "), block.rfind("\n"))
            if cut <= 0:  # no whitespace in the block: keep reading
                carry = block
                continue
            carry = block[cut:]
            yield Chunk([block[:cut]], False)
    yield Chunk([carry], True)


def stream_corpus(paths: Sequence[str | Path], text_field: str | None = None,
                  chunk_chars: int = 8 << 20) -> Iterator[Chunk]:  # fmt: skip
    """Every chunk of every corpus file, in order (see the module docstring)."""
    for p in check_corpus_paths(paths):
        suffix = p.suffix.lower()
        try:
            if suffix in JSONL_SUFFIXES:
                yield from _jsonl(p, text_field, chunk_chars)
            elif suffix in PARQUET_SUFFIXES:
                yield from _parquet(p, text_field, chunk_chars)
            else:
                yield from _text(p, chunk_chars)
        except UnicodeDecodeError as e:
            raise DataError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from e
