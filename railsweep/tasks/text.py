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
