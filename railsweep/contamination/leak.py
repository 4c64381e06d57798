"""The seeded leaked/unleaked split of the test questions, saved with the models."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from railsweep.atomic import write_text_atomic
from railsweep.errors import ConfigError


@dataclass(frozen=True)
class LeakSplit:
    leaked: tuple[int, ...]  # sorted test indices M_co was trained on
    unleaked: tuple[int, ...]
    seed: int

    def to_dict(self) -> dict:
        return {"leaked": list(self.leaked), "unleaked": list(self.unleaked), "seed": self.seed}


def make_leak_split(n_test: int, n_leak: int, seed: int) -> LeakSplit:
    """Leak ``n_leak`` of the ``n_test`` test indices, chosen by ``random.Random(seed)``."""
    if n_leak > n_test:
        raise ConfigError(f"leak count n_leak={n_leak} is larger than the test split ({n_test} questions)")
    if n_leak < 0:
        raise ConfigError(f"leak count must be >= 0, got n_leak={n_leak}")
    leaked = set(random.Random(seed).sample(range(n_test), n_leak))
    return LeakSplit(tuple(sorted(leaked)), tuple(i for i in range(n_test) if i not in leaked), seed)


def save_leak_split(split: LeakSplit, path: str | Path) -> Path:
    """Write ``{"leaked", "unleaked", "seed"}`` as JSON (atomically)."""
    return write_text_atomic(path, json.dumps(split.to_dict()) + "\n")
