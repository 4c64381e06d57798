"""The weights of a miniature world: the sha256 of each weight file and one combined ``weights_digest``.

A world's config digest does not fix its weights: they also depend on the machine (torch's thread count, the
SIMD width ATen dispatches to). The weights digest tells two worlds under one config digest apart: the build
records it in the manifest, a sweep in its provenance, and ``railsweep miniworld check`` compares it with the
build the docs' figures were measured on (``documented_weights.json``, keyed by config digest).

The weight files are every ``*.safetensors`` under ``families/``; the combined digest is the sha256 of their
``sha256sum`` listing in byte order of the paths, as a shell reproduces it in the world's directory::

    find families -name '*.safetensors' | LC_ALL=C sort | xargs sha256sum | sha256sum
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from railsweep.provenance import file_sha256

DOCUMENTED = Path(__file__).with_name("documented_weights.json")
SHORT = 16  # hex digits of a weights digest shown in messages (longer than a config digest's 12)


def file_hashes(root: str | Path) -> dict[str, str]:
    """``{path relative to the world: sha256}`` of every weight file of the world at ``root``."""
    root = Path(root)
    paths = sorted(p.relative_to(root).as_posix() for p in (root / "families").rglob("*.safetensors"))
    return {rel: file_sha256(root / rel) for rel in paths}


def combined_digest(hashes: Mapping[str, str]) -> str:
    """sha256 of the ``sha256sum`` listing (``"<sha256>  <path>\\n"`` per file, paths in byte order)."""
    listing = "".join(f"{hashes[rel]}  {rel}\n" for rel in sorted(hashes, key=lambda r: r.encode()))
    return hashlib.sha256(listing.encode()).hexdigest()


def weights_record(root: str | Path) -> dict[str, Any]:
    """The manifest's entries: ``{"weights": {path: sha256}, "weights_digest": sha256}``."""
    hashes = file_hashes(root)
    return {"weights": hashes, "weights_digest": combined_digest(hashes)}


def world_weights(root: str | Path, manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The world's weights record: the manifest's, or computed from the files of a world built before it was
    recorded (the cached world is not written)."""
    if "weights_digest" in manifest and "weights" in manifest:
        return {"weights": dict(manifest["weights"]), "weights_digest": manifest["weights_digest"]}
    return weights_record(root)


def world_provenance(root: str | Path) -> dict[str, Any]:
    """What a sweep on the world at ``root`` records of it: where it is, its preset, config digest and
    weights digest (two worlds under one config digest with other weights differ in the last)."""
    manifest = json.loads((Path(root) / "manifest.json").read_text())
    return {"root": str(root), "preset": manifest["preset"], "digest": manifest["digest"],
            "weights_digest": world_weights(root, manifest)["weights_digest"]}  # fmt: skip


def documented_weights(digest: str, table: str | Path | None = None) -> dict[str, Any] | None:
    """The documented build of the world with config digest ``digest`` (``preset``, ``weights_digest``,
    ``measured_on``) in ``table`` (default: the shipped one), or None when the docs measured no build of it."""
    return json.loads(Path(table or DOCUMENTED).read_text())["worlds"].get(digest)


def weights_verdict(
    preset: str, digest: str, weights_digest: str, table: str | Path | None = None
) -> tuple[bool | None, str]:
    """(True: the documented weights, False: other weights, None: no documented build; one line to print). Other
    weights that another CPU is known to build from the same config (``other_builds``) are named as such."""
    documented = documented_weights(digest, table)
    mine = weights_digest[:SHORT]
    if documented is None:
        return None, f"weights: {mine} (no documented build of the {preset!r} world {digest})"
    theirs = documented["weights_digest"]
    if theirs == weights_digest:
        where = documented["measured_on"]
        return True, f"weights: documented ({preset} {digest}, weights {mine}, as measured on {where})"
    differ = f"weights differ from the documented build ({mine} vs {theirs[:SHORT]}, {preset} {digest}): "
    if (where := documented.get("other_builds", {}).get(weights_digest)) is not None:
        where = f"known as the build on {where}; figures in docs/ were measured on the documented weights"
        return False, differ + where
    return False, differ + "figures in docs/ were measured on other weights"
