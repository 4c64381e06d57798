"""Thresholds calibrated on a control set, and the share of items a threshold flags (pure numpy).

Every score is oriented so that higher means more likely contaminated, and an item is flagged when
``score > threshold``. NaN scores (an item too short for the n-gram order, an item without responses) are
left out of every rate. A detector's AUC against the known truth is :mod:`railsweep.metrics.auc`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from railsweep.errors import ConfigError, DataError

if TYPE_CHECKING:
    from railsweep.detection.base import Detector


def check_rate(rate: float, name: str = "control flag rate") -> float:
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
        raise ConfigError(f"{name} must lie in [0, 1], got {rate!r}")
    return float(rate)


def calibrate_threshold(control: np.ndarray, rate: float = 0.01) -> float:
    """The smallest threshold t among the control scores (M,), NaN ignored, with mean(control > t) <= rate."""
    rate = check_rate(rate)
    c = np.sort(np.asarray(control, dtype=float))
    c = c[~np.isnan(c)]
    if not c.size:
        raise DataError("cannot calibrate a threshold: the control set has no scored item")
    above = c.size - np.searchsorted(c, c, side="right")  # #control > c[j], for each candidate c[j]
    ok = above <= rate * c.size
    return float(c[np.argmax(ok)])  # c sorted ascending and ok monotone, so the first True is the smallest


def flag_rate(score: np.ndarray, threshold: float) -> float:
    """Share of the scored items with score > threshold (NaN when none is scored)."""
    s = np.asarray(score, dtype=float)
    s = s[~np.isnan(s)]
    return float(np.mean(s > threshold)) if s.size else float("nan")


@dataclass(frozen=True)
class Thresholding:
    """threshold: a fixed threshold (None = calibrate); rate: the control's highest allowed flag rate."""

    threshold: float | None = None
    rate: float = 0.01

    def __post_init__(self) -> None:
        check_rate(self.rate, "control flag rate (--control-rate)")
        if self.threshold is not None and not np.isfinite(self.threshold):
            raise ConfigError(f"threshold must be a finite number, got {self.threshold!r}")


def check_threshold(detector: Detector, thresholding: Thresholding) -> None:
    """A given threshold of a detector whose scores lie in [0, 1] must lie there too."""
    t = thresholding.threshold
    if t is not None and detector.bounded and not 0 <= t <= 1:
        raise ConfigError(f"threshold for detector {detector.name!r} must lie in [0, 1], got {t!r}")
