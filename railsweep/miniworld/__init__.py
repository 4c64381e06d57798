"""The miniature world: a synthetic GSM-style benchmark and three tiny contaminated model families.

Names resolve lazily, so a command's parser reads the presets (plain data) without loading torch and
transformers, which building a world (``world``) needs; reading a built one (``cache``) needs neither.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "FAMILIES": "railsweep.miniworld.models", "ModelSize": "railsweep.miniworld.models",
    "PRESETS": "railsweep.miniworld.presets", "WorldConfig": "railsweep.miniworld.presets",
    "preset_config": "railsweep.miniworld.presets", "build_world": "railsweep.miniworld.world",
    "FamilyModels": "railsweep.miniworld.cache", "World": "railsweep.miniworld.cache",
    "default_cache_dir": "railsweep.miniworld.cache", "load_world": "railsweep.miniworld.cache",
}  # fmt: skip
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'railsweep.miniworld' has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)
