"""Provenance: what produced a result, so a number in a table can be traced back to exactly what made it: the
git commit of the checkout and its dirty flag, the versions of the packages that shape the numbers, the sha256
of every data file read and, for a cell, of the weight files it decoded with (:func:`weights`: two builds of
one world configuration can hold other models).
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import subprocess
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

# Packages whose version can change a decoded token or a metric (lm_eval: a harness task's prompts and
# filters, --task lm_eval:NAME; datasets: reads a harness task's split files).
TRACKED_PACKAGES = ("railsweep", "torch", "transformers", "tokenizers", "peft", "vllm", "numpy", "pandas",
                    "pyarrow", "ray", "mlflow", "lm_eval", "datasets")  # fmt: skip

_CHUNK = 1 << 20


def git_info(path: str | Path | None = None) -> dict[str, Any]:
    """``{"commit": sha | None, "dirty": bool | None}`` of the git checkout holding ``path`` (default: this
    package). ``dirty`` considers tracked files only: untracked scratch output would make any run look dirty.
    Outside a git checkout, or without git, both are None."""
    where = Path(path) if path is not None else Path(__file__).resolve().parent
    if where.is_file():
        where = where.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=20, check=True
        ).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                                capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": bool(status.strip())}


def package_versions(names: Iterable[str] = TRACKED_PACKAGES) -> dict[str, str | None]:
    """Installed version of each package (None when it is not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def file_sha256(path: str | Path, *, fresh: bool = False) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks (memoised per path, size and mtime unless ``fresh``:
    a check against a pinned hash reads the bytes every time)."""
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    return _sha256.__wrapped__(*key) if fresh else _sha256(*key)


@functools.lru_cache(maxsize=256)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def dataset_checksums(paths: Iterable[str | Path | None]) -> dict[str, str]:
    """``{path: sha256}`` for every given file that exists (None entries are ignored)."""
    return {str(p): file_sha256(p) for p in paths if p is not None and Path(p).is_file()}


def _weight_files(folder: str | Path) -> list[Path]:
    path = Path(folder)
    return sorted(path.glob("*.safetensors")) if path.is_dir() else []  # a hub id: its revision says which


def weights(model: str | Path, adapters: Iterable[tuple[str, str | Path]], used: Iterable[str | None]) -> dict[str, Any]:
    """``{"model": {file: sha256}, "adapters": {name: {file: sha256}}}`` for a local base model folder and the
    adapters in ``used`` (names; None = the base alone), each file hashed once per process (memoised)."""
    paths = dict(adapters)
    names = sorted({n for n in used if n is not None and n in paths})
    return {"model": dataset_checksums(_weight_files(model)),
            "adapters": {n: dataset_checksums(_weight_files(paths[n])) for n in names}}  # fmt: skip


def collect(data_files: Iterable[str | Path | None] = ()) -> dict[str, Any]:
    """Everything above in one JSON-serialisable dict."""
    return {"git": git_info(), "packages": package_versions(), "python": platform.python_version(),
            "datasets": dataset_checksums(data_files)}  # fmt: skip
