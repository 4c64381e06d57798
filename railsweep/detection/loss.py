"""Model side: the evaluated model's loss on an item against a reference model's.

score(item) = NLL_ref(item) - NLL_model(item), the mean teacher-forced token NLL of
:meth:`Item.training_text` (the text as the models are trained and prompted on it); the reference is the
clean adapter or the base. A model that saw the item predicts it better than the reference, and the
subtraction removes how hard the text is for any model of the family. ``matched`` also subtracts the
score of the control item nearest in token count (it matters when item lengths differ a lot).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from railsweep.detection.base import DetectInputs, Detector, Item, Scores, register
from railsweep.detection.nll import mean_nll, teacher_forcer


@dataclass(frozen=True)
class LossConfig:
    """Loss against a reference model (no parameters beyond the inputs' reference adapter)."""


def matched_control(score: np.ndarray, lengths: np.ndarray, is_control: np.ndarray) -> np.ndarray:
    """``score`` minus the score of the control item nearest in length (ties: the first); NaN without
    controls. score, lengths: (N,); is_control: bool (N,)."""
    ctrl = np.flatnonzero(is_control)
    if not ctrl.size:
        return np.full(score.shape, np.nan)
    nearest = ctrl[np.argmin(np.abs(lengths[:, None] - lengths[ctrl][None, :]), axis=1)]
    return score - score[nearest]


@register("loss", LossConfig)
class Loss(Detector):
    def score(self, items: Sequence[Item], inputs: DetectInputs) -> list[Scores]:
        inputs.require(self.name, "model")
        forcer = teacher_forcer(inputs.model, inputs.device)
        texts = [it.training_text() for it in items]
        lp_model = forcer.logprobs(texts, inputs.adapter, inputs.batch_size)
        lp_ref = forcer.logprobs(texts, inputs.reference_adapter, inputs.batch_size)
        nll_model, nll_ref = mean_nll(lp_model), mean_nll(lp_ref)
        score = nll_ref - nll_model
        lengths = np.array([lp.size for lp in lp_model], dtype=float)
        is_control = np.array([it.group == "control" for it in items])
        ref = "base" if inputs.reference_adapter is None else "clean"
        matched = matched_control(score, lengths, is_control)
        extras = {"nll_model": nll_model, "nll_reference": nll_ref, "matched": matched}
        return [Scores(f"reference={ref}", score, extras)]
