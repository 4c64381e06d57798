"""The miniature world: a synthetic GSM-style benchmark and three tiny contaminated model families.

Names resolve lazily (as in :mod:`railsweep.bases`), so a command's parser reads the presets
(``railsweep.miniworld.presets``: plain data) without loading torch and transformers, which building a world
(``railsweep.miniworld.world``) needs; reading a built one (``railsweep.miniworld.cache``) needs neither.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "FAMILIES": "railsweep.miniworld.models",
    "ModelSize": "railsweep.miniworld.models",
    "PRESETS": "railsweep.miniworld.presets",
    "WorldConfig": "railsweep.miniworld.presets",
    "preset_config": "railsweep.miniworld.presets",
    "FamilyModels": "railsweep.miniworld.cache",
    "World": "railsweep.miniworld.cache",
    "build_world": "railsweep.miniworld.world",
    "default_cache_dir": "railsweep.miniworld.cache",
    "load_world": "railsweep.miniworld.cache",
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'railsweep.miniworld' has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)
