"""Contamination detectors, one module each, registered by name, and their scoring against the truth.

Importing this package registers every built-in detector: ``ngram`` (corpus
n-gram containment), ``loss`` (loss against a reference model), ``mink``
(Min-k% Prob), ``cdd`` (output peakedness) and ``perturb`` (solve probability
original minus paraphrase). Torch loads only when a
model-side detector scores.
"""

from railsweep.detection import cdd, loss, mink, ngram, perturb  # noqa: F401  (each registers itself)
from railsweep.detection.base import (  # noqa: F401
    DetectInputs,
    Item,
    Scores,
    build_detector,
    known_detectors,
    make_config,
)
from railsweep.detection.run import Thresholding, detect  # noqa: F401
from railsweep.detection.scoring import calibrate_threshold  # noqa: F401
