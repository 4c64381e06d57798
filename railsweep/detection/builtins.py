"""The built-in detectors: importing this module registers each one (the detector registry loads it on first use)."""

from railsweep.detection import cdd, loss, mink, ngram, perturb  # noqa: F401  (each registers itself)
