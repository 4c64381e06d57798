"""Worlds that ship with railsweep: a finished build's files, installed into the cache instead of trained again.

Training the ``mini`` world takes about 23 minutes on 2 cores, and its fp32 weights follow the CPU that trains
them (docs/miniworld.md, "The weights of `mini`"). railsweep therefore ships one build of it: every file but
its data under ``shipped/<preset>-<config digest>/``, listed in ``SHA256SUMS``, the world's absolute directory
written as ``PLACEHOLDER`` in the text files. :func:`install` regenerates the data (each file checked against
the sha256 the build recorded), checks every shipped file and copies them in; :func:`pack` writes such a
folder from a built world. ``railsweep miniworld build --force`` trains the world here instead.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from railsweep.contamination.simulator import write_json
from railsweep.errors import DataError
from railsweep.miniworld.benchmark import write_benchmark
from railsweep.miniworld.cache import LEAK_SPLIT, write_leak_split
from railsweep.miniworld.lending import copy_lent_dir
from railsweep.miniworld.presets import WorldConfig
from railsweep.provenance import file_sha256

SHIPPED_DIR = Path(__file__).with_name("shipped")
SUMS = "SHA256SUMS"
PLACEHOLDER = "@RAILSWEEP_WORLD@"
TEXT_SUFFIXES = (".json", ".md")  # the files that name the world's directory (as copy_lent_dir re-points them)
_REMEDY = "reinstall railsweep, or train the world here with `railsweep miniworld build --force`"


def shipped_folder(config: WorldConfig) -> Path | None:
    """The shipped build of the world ``config`` describes, or None: only an exact config digest matches."""
    found = sorted(SHIPPED_DIR.glob(f"*-{config.digest()}/{SUMS}"))
    return found[0].parent if found else None


def read_sums(folder: Path) -> dict[str, str]:
    """``{path: sha256}`` from the folder's ``SHA256SUMS`` (``sha256sum``'s format)."""
    sums = {}
    for n, line in enumerate((folder / SUMS).read_text(encoding="utf-8").splitlines(), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64:
            raise DataError(f"{folder / SUMS}:{n}: not a sha256sum line: {line!r}")
        sums[rel] = digest
    return sums


def verify(folder: Path) -> dict[str, str]:
    """Every file the listing names, present with its sha256; returns the listing. A missing or changed file
    is a broken installation: one error naming it."""
    sums = read_sums(folder)
    for rel, digest in sums.items():
        path = folder / rel
        if not path.is_file():
            raise DataError(f"shipped world file missing: {path}; {_REMEDY}")
        if file_sha256(path, fresh=True) != digest:
            raise DataError(f"shipped world file changed: {path} (sha256 {file_sha256(path)[:16]}, listed "
                            f"{digest[:16]}); {_REMEDY}")
    return sums


def install(
    folder: Path, root: Path, config: WorldConfig, log, on_ready: Callable[[str], None] = lambda stage: None
) -> bool:
    """Fill the empty world directory ``root`` from the shipped ``folder``; False (``root`` emptied again) when
    the data this machine generates are not the data the shipped models were trained on, so the caller builds
    the world instead. The manifest is written last, as a build writes it."""
    t0 = time.time()
    sums = verify(folder)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8").replace(PLACEHOLDER, str(root)))
    write_benchmark(root / "data", config)
    if (changed := _data_mismatch(root, manifest)) is not None:
        log(f"the shipped {folder.name} world was trained on other data ({changed} differs here): training it")
        for child in root.iterdir():  # emptied again for the build
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        return False
    on_ready("data")
    for part in sorted({rel.split("/")[0] for rel in sums if "/" in rel}):  # tokenizer/, families/, ...
        # lent as a sibling world lends its parts, the placeholder standing for the lender's directory
        copy_lent_dir(folder / part, root / part, Path(PLACEHOLDER), root)
    _check_leak_split(write_leak_split(root, config.families[0]), manifest)
    for family in config.families:
        on_ready(family)
    manifest["shipped"] = {"folder": folder.name, "files": len(sums), "install_seconds": round(time.time() - t0, 2)}
    write_json(root / "manifest.json", manifest)
    log(f"installed the shipped {folder.name} world ({len(sums)} files, sha256-checked) in {time.time() - t0:.0f}s")
    return True


def pack(root: Path, out: Path) -> Path:
    """Write the built world at ``root`` as a shipped folder under ``out`` (``out/<world dir name>/``, replaced
    if present): every file but ``data/``, the world's directory written as ``PLACEHOLDER``, and the listing."""
    dest = out / root.name
    if dest.exists():
        shutil.rmtree(dest)
    rels = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    for rel in (r for r in rels if not r.startswith("data/")):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel == "manifest.json":  # as the build wrote it: a world installed from a shipped folder says so
            manifest = {k: v for k, v in json.loads((root / rel).read_text()).items() if k != "shipped"}
            text = json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n"  # write_json's format
            target.write_text(text.replace(str(root), PLACEHOLDER), encoding="utf-8")
        elif Path(rel).suffix in TEXT_SUFFIXES:
            target.write_text((root / rel).read_text(encoding="utf-8").replace(str(root), PLACEHOLDER), "utf-8")
        else:
            shutil.copyfile(root / rel, target)
    listing = sorted((p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()), key=str.encode)
    lines = "".join(f"{file_sha256(dest / rel)}  {rel}\n" for rel in listing)
    (dest / SUMS).write_text(lines, encoding="utf-8")
    return dest


def _data_mismatch(root: Path, manifest: dict) -> str | None:
    """The first data file (other than the leak split, written from the adapters) whose sha256 differs from the
    one the shipped build recorded, or None."""
    for path, digest in sorted(manifest["provenance"]["datasets"].items()):
        rel = Path(path).relative_to(root).as_posix()
        if rel != LEAK_SPLIT and file_sha256(root / rel) != digest:
            return rel
    return None


def _check_leak_split(path: Path, manifest: dict) -> None:
    """The leak split written from the adapters must be the one the shipped build recorded."""
    recorded = manifest["provenance"]["datasets"].get(str(path))
    if recorded is not None and file_sha256(path) != recorded:
        raise DataError(f"shipped world {path.parents[1].name}: its leak split does not match the one its build "
                        f"recorded; {_REMEDY}")
