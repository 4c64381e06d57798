"""Contamination detectors, one module each, registered by name, and their scoring against the truth.

Built in: ``ngram`` (corpus n-gram containment), ``loss`` (against a reference model), ``mink`` (Min-k%
Prob), ``cdd`` (output peakedness), ``perturb`` (solve probability, original minus paraphrase). Names
resolve lazily (as in :mod:`railsweep.results`), so validating a sweep spec's detectors loads neither
pandas nor pyarrow, and torch loads only when a model-side detector scores.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {"DetectInputs": "railsweep.detection.base", "Item": "railsweep.detection.base",
          "Scores": "railsweep.detection.base", "build_detector": "railsweep.detection.base",
          "known_detectors": "railsweep.detection.base", "make_config": "railsweep.detection.base",
          "Thresholding": "railsweep.detection.scoring", "calibrate_threshold": "railsweep.detection.scoring",
          "detect": "railsweep.detection.run"}  # fmt: skip
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module 'railsweep.detection' has no attribute {name!r}")
    return getattr(importlib.import_module(_NAMES[name]), name)
