"""Running detectors over test + control items, and the per-item table they produce.

Steps of :func:`detect`:
1. check that the control set is disjoint from the test set;
2. score the test items followed by the control items with each detector (one or more
   settings per detector);
3. per setting, the threshold: the one given, else one calibrated on the control scores
   (control flag rate <= ``rate``), else the detector's own default (CDD's xi), else none;
4. one row per item per setting (:data:`COLUMNS`, plus ``x_<name>`` extras).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from railsweep.detection.base import DetectInputs, Detector, Item
from railsweep.detection.items import check_disjoint
from railsweep.detection.scoring import Thresholding, calibrate_threshold, check_threshold

COLUMNS = (
    "detector",  # registered name
    "setting",  # the variant, e.g. "n=13,fields=question"
    "family",  # model family label (None for corpus-side detectors)
    "domain",  # contamination domain label, where known
    "item_id",  # test: index in the test split; control: index in the control set
    "group",  # "test" | "control"
    "leaked",  # the truth where known (nullable)
    "score",  # higher = more likely contaminated (NaN = undefined for this item)
    "threshold",  # flagged = score > threshold (NaN when no threshold applies)
    "threshold_source",  # "given" | "control" | "default" | "none"
    "flagged",  # nullable
)


def _threshold(detector: Detector, score: np.ndarray, is_control: np.ndarray, th: Thresholding):
    if th.threshold is not None:
        return float(th.threshold), "given"
    ctrl = score[is_control]
    if ctrl.size and not np.isnan(ctrl).all():
        return calibrate_threshold(ctrl, th.rate), "control"
    default = getattr(detector.config, "xi", None)
    if default is not None:
        return float(default), "default"
    return float("nan"), "none"


def detect(
    detectors: Sequence[Detector], test: Sequence[Item], control: Sequence[Item], inputs: DetectInputs,
    thresholding: Thresholding | None = None, family: str | None = None, domain: str | None = None,
) -> pd.DataFrame:  # fmt: skip
    """The per-item table of every detector's every setting (see the module docstring)."""
    th = thresholding or Thresholding()
    for d in detectors:
        check_threshold(d, th)
    check_disjoint(test, control)
    items = [*test, *control]
    groups = [it.group for it in items]
    is_control = np.array([g == "control" for g in groups])
    frames = []
    for det in detectors:
        for scores in det.score(items, inputs):
            score = np.asarray(scores.score, dtype=float)
            t, source = _threshold(det, score, is_control, th)
            flagged = pd.array([None if np.isnan(s) or np.isnan(t) else bool(s > t) for s in score],
                               dtype="boolean")  # fmt: skip
            item_id = np.array([it.item_id for it in items], dtype=np.int64)
            leaked = pd.array([it.leaked for it in items], dtype="boolean")
            values = (det.name, scores.setting, family, domain, item_id, groups, leaked, score, t, source)
            frame = pd.DataFrame(dict(zip(COLUMNS, (*values, flagged))))
            for name, values in scores.extras.items():
                frame[f"x_{name}"] = np.asarray(values, dtype=float)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
