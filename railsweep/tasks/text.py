"""Reading text files as UTF-8, with one clear error (file, line, column, byte) when they are not."""

from __future__ import annotations

from pathlib import Path

from railsweep.errors import DataError


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
