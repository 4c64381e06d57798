"""Real pretrained base models: pinned sources (a GGUF in a registry wheel, a hub id, a folder), converted once."""

from railsweep.bases.cache import PreparedBase, prepare_base
from railsweep.bases.sources import KNOWN_WHEELS, HubModel, LocalFolder, WheelGguf, parse_source

__all__ = [
    "KNOWN_WHEELS",
    "HubModel",
    "LocalFolder",
    "PreparedBase",
    "WheelGguf",
    "parse_source",
    "prepare_base",
]
