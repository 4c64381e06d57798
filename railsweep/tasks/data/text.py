"""Reading text files as UTF-8, with one clear error (file, line, column, byte) when they are not."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from railsweep.errors import DataError

_T = TypeVar("_T")


def read_utf8(path: str | Path) -> str:
    """The file's text; bytes that are not UTF-8 raise :class:`DataError` naming where they are."""
    path = Path(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise DataError(
            f"{path}:{line}:{column}: not UTF-8 text (byte 0x{data[e.start]:02x}); save the file as UTF-8"
        ) from None


def existing_file(path: str | Path, what: str) -> Path:
    """``path``, or a DataError naming ``what`` when there is no such file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{what} file not found: {path}")
    return path


def json_lines(path: str | Path, text: str | None = None, skip_blank: bool = False) -> Iterator[tuple[int, Any]]:
    """``(line number, value)`` per line of a JSONL file (``text``: its contents if read), split as a text-mode file
    splits; a blank (unless ``skip_blank``) or malformed line raises :class:`DataError` naming file and line."""
    with io.StringIO(read_utf8(path) if text is None else text, newline=None) as f:
        for lineno, raw in enumerate(f, start=1):
            if not raw.strip():
                if skip_blank:
                    continue
                raise DataError(f"{path}:{lineno}: blank line (every line must be one JSON object)")
            try:
                value = json.loads(raw)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
            yield lineno, value


def parse_json(text: str, path: str | Path) -> Any:
    """One JSON document read from ``path``; malformed JSON raises :class:`DataError` naming the file and line."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e


def string_fields(row: Any, where: str, a: str, b: str) -> dict[str, str]:
    """``{a, b}`` of ``row`` if it is an object with both as strings, else DataError at ``where``."""
    if not (isinstance(row, dict) and isinstance(row.get(a), str) and isinstance(row.get(b), str)):
        raise DataError(f"{where}: expected an object with string '{a}' and '{b}'")
    return {a: row[a], b: row[b]}


def checked_jsonl(path: str | Path, what: str, check: Callable[[Any, str], _T]) -> list[_T]:
    """``check(row, "file:line")`` of every row of a JSONL file; a missing file is a DataError naming ``what``."""
    path = existing_file(path, what)
    return [check(row, f"{path}:{lineno}") for lineno, row in json_lines(path)]


def exemplar_list(path: str | Path, fields: str, check: Callable[[Any, str], _T]) -> list[_T]:
    """A few-shot file's non-empty JSON list of ``{fields}`` objects, each through ``check``; else DataError."""
    path = existing_file(path, "few-shot exemplar")
    data = parse_json(read_utf8(path), path)
    if not isinstance(data, list) or not data:
        raise DataError(f"{path}: expected a non-empty JSON list of {{{fields}}} objects")
    return [check(ex, f"{path}: exemplar {i}") for i, ex in enumerate(data)]


def check_utf8(path: str | Path, block: int = 1 << 20) -> None:
    """Decode ``path`` block by block, so a large corpus is checked before any work without being held
    in memory; the first bad byte raises :class:`DataError` naming file, line and byte offset."""
    start, lines, buf = 0, 0, b""  # buf: bytes from file offset ``start`` not yet known to be valid
    with open(path, "rb") as f:
        while True:
            data = f.read(block)
            buf += data
            try:
                buf.decode("utf-8")
                done = len(buf)
            except UnicodeDecodeError as e:
                if data and e.reason == "unexpected end of data":  # a character cut by the block edge
                    done = e.start
                else:
                    line = lines + buf.count(b"\n", 0, e.start) + 1
                    raise DataError(
                        f"{path}:{line}: not UTF-8 text (byte 0x{buf[e.start]:02x} at offset {start + e.start}); "
                        "save the file as UTF-8"
                    ) from None
            if not data:
                return
            lines += buf.count(b"\n", 0, done)
            start, buf = start + done, buf[done:]
