"""A built world on disk, read without torch: where the cache is, which directory holds a preset's world, and the
:class:`World` its manifest describes (:mod:`railsweep.miniworld.world` builds one).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from railsweep.contamination.leak import LeakSplit, save_leak_split
from railsweep.errors import ConfigError
from railsweep.miniworld.lending import config_from_dict
from railsweep.miniworld.presets import PRESETS, WorldConfig, preset_config
from railsweep.miniworld.weights import world_weights

LEAK_SPLIT = "data/leak_split.json"  # the world's leak split, relative to its directory


@dataclass(frozen=True)
class FamilyModels:
    name: str
    base_dir: Path
    adapters: dict[str, Path]  # {"clean": dir, "co_gsm8k": dir, "co_pq": dir}


@dataclass(frozen=True)
class World:
    root: Path
    preset: str
    config: WorldConfig
    families: list[str]
    data_dir: Path
    leak_split_path: Path
    manifest: dict

    def family(self, name: str) -> FamilyModels:
        if name not in self.families:
            raise ConfigError(
                f"unknown model family {name!r} in this world; families: {', '.join(self.families)}"
            )
        fam = self.root / "families" / name
        names = ("clean",) + tuple(f"co_{d}" for d in self.config.contamination.domains)
        return FamilyModels(name, fam / "base", {a: fam / "adapters" / a for a in names})

    @property
    def leaked(self) -> list[int]:
        return json.loads(self.leak_split_path.read_text())["leaked"]

    @property
    def weights(self) -> dict:
        """``{"weights": {path: sha256}, "weights_digest": sha256}`` (:func:`~.weights.world_weights`)."""
        return world_weights(self.root, self.manifest)


def default_cache_dir() -> Path:
    return Path(os.environ.get("RAILSWEEP_CACHE") or Path.home() / ".cache" / "railsweep")


def world_root(preset: str, cache_dir: str | Path | None = None, config: WorldConfig | None = None) -> Path:
    """The directory of ``preset``'s world in the cache (``<cache>/miniworld/<preset>-<config digest>``)."""
    config = config or preset_config(preset)
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return cache / "miniworld" / f"{preset}-{config.digest()}"


def cached_world(
    preset: str, cache_dir: str | Path | None = None, config: WorldConfig | None = None
) -> World | None:
    """The finished world of ``preset`` (``config`` overrides its configuration) in the cache, or None; the
    same world built under another preset name (a preset renamed) is the same world."""
    config = config or preset_config(preset)
    root = world_root(preset, cache_dir, config)
    if (root / "manifest.json").is_file():
        return load_world(root)
    same = sorted(root.parent.glob(f"*-{config.digest()}/manifest.json"))
    return load_world(same[0].parent) if same else None


def load_world(root: str | Path) -> World:
    root = Path(root)
    manifest = json.loads((root / "manifest.json").read_text())
    preset = manifest["preset"]
    config = PRESETS[preset]() if preset in PRESETS else None
    if config is None or config.digest() != manifest["digest"]:
        config = config_from_dict(manifest["config"])
    return World(root, preset, config, list(manifest["families"]), root / "data", root / LEAK_SPLIT, manifest)


def write_leak_split(root: str | Path, family: str) -> Path:
    """The world's ``data/leak_split.json`` from ``family``'s adapters, unless written (the split is a
    function of n_test, n_leak and seed, the same for every family)."""
    path = Path(root) / LEAK_SPLIT
    if not path.is_file():
        split = json.loads((Path(root) / "families" / family / "adapters" / "leak_split.json").read_text())
        save_leak_split(LeakSplit(tuple(split["leaked"]), tuple(split["unleaked"]), split["seed"]), path)
    return path
