"""Model side: Min-k% Prob (Shi et al. 2024), a membership score from the model alone.

The mean of the lowest ``max(1, floor(T k / 100))`` of the T token log-probabilities of
:meth:`Item.training_text` under the evaluated model (as the authors' code counts). A seen text has few
surprising tokens, so its worst tokens are less improbable and its score is higher.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from railsweep.detection.base import DetectInputs, Detector, Item, Scores, register
from railsweep.detection.nll import teacher_forcer
from railsweep.errors import ConfigError


@dataclass(frozen=True)
class MinKConfig:
    """k: the percentage of lowest-probability tokens averaged (paper default 20)."""

    k: float = 20.0

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int | float) or not 0 < self.k <= 100:
            raise ConfigError(f"min-k% k must be a percentage in (0, 100], got k={self.k!r}")


def min_k_score(logprobs: np.ndarray, k: float) -> float:
    """Mean of the lowest ``max(1, floor(T k / 100))`` of T token log-probs; NaN when T = 0."""
    if not logprobs.size:
        return float("nan")
    count = max(1, int(logprobs.size * k / 100))
    return float(np.sort(logprobs)[:count].mean())


@register("mink", MinKConfig)
class MinK(Detector):
    def score(self, items: Sequence[Item], inputs: DetectInputs) -> list[Scores]:
        inputs.require(self.name, "model")
        forcer = teacher_forcer(inputs.model, inputs.device)
        lps = forcer.logprobs([it.training_text() for it in items], inputs.adapter, inputs.batch_size)
        k = self.config.k
        return [Scores(f"k={k:g}", np.array([min_k_score(lp, k) for lp in lps]))]
