"""One model family's dynamics data, as collected (:mod:`railsweep.dynamics.collect` or a sweep's step).

A plain record kept apart from the collection, so that reading and analysing it loads no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from railsweep.dynamics.forcing import PositionStats
from railsweep.dynamics.observe import Observed


@dataclass
class FamilyData:
    family: str
    items: list[int]  # test indices
    leaked: np.ndarray  # (N,) bool
    gold: dict[str, list[PositionStats]]  # model -> per item, along the gold chain of thought
    greedy: dict[str, list[PositionStats]]  # model -> per item, along the model's greedy answer
    observed: dict[str, dict[float, Observed]]  # model -> tau -> per item
    seconds: dict[str, float] = field(default_factory=dict)
    replicas: np.ndarray | None = None  # (N,) pretraining copies of each item (a replica world), else None
