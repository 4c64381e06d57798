"""Resolving a sweep spec: the miniature world built (or reused from the cache) and its paths filled in. Apart
from :mod:`railsweep.sweep.spec.sweep_spec` because building a world loads torch, which the spec must not.
"""

from __future__ import annotations

import dataclasses

from railsweep.errors import ConfigError
from railsweep.miniworld.cache import World
from railsweep.miniworld.world import build_world
from railsweep.sweep.spec.sections import FamilySpec
from railsweep.sweep.spec.sweep_spec import SweepSpec


def resolve_spec(spec: SweepSpec, world: World | None = None, check: bool = True) -> SweepSpec:
    """``spec`` with paths from ``world`` (default: built or cached), checked unless ``check`` is False."""
    if spec.source == "miniworld":
        spec = _with_world(spec, world or build_world(spec.miniworld_preset, cache_dir=spec.cache_dir))
    if check:
        spec.check_paths()
    return spec


def _with_world(spec: SweepSpec, world: World) -> SweepSpec:
    """A miniworld spec with its world's families (all, or the ones it names), data folder and leak split."""
    fams = []
    for name in [f.name for f in spec.families] or list(world.families):
        if name not in world.families:
            raise ConfigError(f"unknown family {name!r} for the {spec.miniworld_preset!r} miniature world; "
                              f"known: {list(world.families)}")
        fm = world.family(name)
        adapters = tuple(sorted((k, str(v)) for k, v in fm.adapters.items()))
        fams.append(FamilySpec(name, str(fm.base_dir), adapters))
    leak_split = str(world.leak_split_path) if world.leak_split_path else None
    return dataclasses.replace(spec, families=tuple(fams), data_dir=str(world.data_dir),
                               leak_split=leak_split)  # fmt: skip
