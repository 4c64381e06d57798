"""The miniature world: a synthetic GSM-style benchmark and three tiny contaminated model families."""

from railsweep.miniworld.models import FAMILIES, ModelSize
from railsweep.miniworld.presets import PRESETS, WorldConfig, preset_config
from railsweep.miniworld.world import FamilyModels, World, build_world, default_cache_dir, load_world

__all__ = [
    "FAMILIES",
    "PRESETS",
    "FamilyModels",
    "ModelSize",
    "World",
    "WorldConfig",
    "build_world",
    "default_cache_dir",
    "load_world",
    "preset_config",
]
