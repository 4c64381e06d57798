"""railsweep: did this decoding trick really restore my contaminated model's ability, question by question?

The public API is a handful of names (``_LAZY``), imported lazily so that ``import railsweep.metrics`` stays
numpy-only.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {"GSM8KTask": "railsweep.tasks", "score_pair": "railsweep.analysis.scoring",
         "build_strategy": "railsweep.strategies.base", "known_strategies": "railsweep.strategies.base",
         "TransformersEngine": "railsweep.engines.transformers_engine", "CellConfig": "railsweep.config",
         "evaluate_cell": "railsweep.evaluate", "build_world": "railsweep.miniworld"}  # fmt: skip
__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'railsweep' has no attribute {name!r}")
