"""Atomic file writes: a reader sees the old file or the whole new one, never a half-written one.

Every file or whole directory railsweep writes for another process goes through here: a temporary sibling (same
directory, so the rename stays on one filesystem) is written, then renamed over the target with
:func:`os.replace`; on any error the temporary is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

Writer = Callable[[Path], object]  # writes the whole file at the path it is given


def temporary_sibling(path: Path) -> Path:
    """A fresh hidden name beside ``path`` (unique per call, so concurrent writers never share one)."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")


def write_atomic(path: str | Path, write: Writer) -> Path:
    """Call ``write(tmp)``, then rename the temporary into ``path`` (parents created); remove it on any error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return path


def write_text_atomic(path: str | Path, text: str) -> Path:
    """:func:`write_atomic` of ``text`` as UTF-8."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_all_atomic(writers: Mapping[Path, Writer]) -> list[Path]:
    """Several files, all or none.

    1. each file is written to its temporary sibling (missing directories are created);
    2. the temporaries are renamed over their targets in order;
    3. on any error, every temporary and every target already renamed is removed, and each directory this
       call created is removed again when it is empty.
    """
    paths = [Path(p) for p in writers]
    created = [d for d in dict.fromkeys(p.parent for p in paths) if not d.exists()]
    tmp = {p: temporary_sibling(p) for p in paths}
    placed: list[Path] = []
    try:
        for p, write in zip(paths, writers.values()):
            p.parent.mkdir(parents=True, exist_ok=True)
            write(tmp[p])
        for p in paths:
            os.replace(tmp[p], p)
            placed.append(p)
    except BaseException:
        for p in [*tmp.values(), *placed]:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        for d in reversed(created):
            with contextlib.suppress(OSError):
                d.rmdir()  # only succeeds when empty
        raise
    return paths


def synced_text(text: str) -> Writer:
    """A writer of ``text`` (UTF-8) synced to disk before the rename (files that must survive a crash together)."""

    def write(path: Path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    return write


def write_dir_atomic(path: str | Path, write: Writer, *, replace: bool = False, mode: int = 0o755) -> Path:
    """:func:`write_atomic` for a directory. An existing ``path`` is removed first when ``replace``; otherwise it
    stays when it holds files (a concurrent writer of the same content finished first) or is taken over when empty.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        write(tmp)
        os.chmod(tmp, mode)
        if replace and path.exists():
            shutil.rmtree(path)
        try:
            os.replace(tmp, path)  # onto an empty directory too; a non-empty one refuses
        except OSError:
            if not path.is_dir() or not any(path.iterdir()):
                raise
            shutil.rmtree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return path


def link_files(src: Path, dst: Path, skip: tuple[str, ...] = ()) -> None:
    """``dst`` (created) holding hard links to ``src``'s files, those ending in ``skip`` left out; copies where the
    filesystem refuses links."""
    dst.mkdir(parents=True, exist_ok=True)
    for path in sorted(src.iterdir()):
        if not path.is_file() or path.suffix in skip:
            continue
        try:
            os.link(path, dst / path.name)
        except OSError:
            shutil.copy2(path, dst / path.name)
