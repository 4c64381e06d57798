"""Real pretrained base models: pinned sources (a GGUF in a registry wheel, a hub id, a folder), converted once.

Names resolve lazily, so ``railsweep.bases.sources`` (plain data, no torch) can be imported by a command's parser
without loading transformers.
"""

from __future__ import annotations

import importlib

_NAMES = {
    "PreparedBase": "railsweep.bases.cache", "prepare_base": "railsweep.bases.cache",
    "KNOWN_WHEELS": "railsweep.bases.sources", "HubModel": "railsweep.bases.sources",
    "LocalFolder": "railsweep.bases.sources", "WheelGguf": "railsweep.bases.sources",
    "parse_source": "railsweep.bases.sources",
}  # fmt: skip
__all__ = sorted(_NAMES)


def __getattr__(name: str):
    if name not in _NAMES:
        raise AttributeError(f"module 'railsweep.bases' has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)
