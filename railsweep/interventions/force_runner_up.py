"""A diagnostic intervention: emit the runner-up token at chosen generated steps, to measure how well a model
recovers from a departure (``railsweep rails``). Every other logit becomes -inf, so any temperature emits the
runner-up. A measurement, not a mitigation: only the transformers engine has an adapter for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from railsweep.errors import ConfigError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class ForceRunnerUpSpec:
    """Emit the runner-up at each generated step in ``steps`` (0 = the first generated token)."""

    steps: tuple[int, ...]

    def __post_init__(self) -> None:
        if any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in self.steps):
            raise ConfigError(f"ForceRunnerUp steps must be integers >= 0, got {self.steps!r}")
        if len(set(self.steps)) != len(self.steps):
            raise ConfigError(f"ForceRunnerUp steps must be distinct, got {self.steps!r}")


def force_runner_up(logits: torch.Tensor, active: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep only the runner-up logit of every active row (``logits[B, V]``, ``active[B]`` bool), in place;
    returns ``(logits, triggered[B] = active)``."""
    import torch

    runner_up = logits.topk(2, dim=-1).indices[:, 1:2]
    kept = logits.gather(1, runner_up)
    ninf = torch.full_like(logits, float("-inf")).scatter_(1, runner_up, kept)
    logits.copy_(torch.where(active[:, None], ninf, logits))
    return logits, active.clone()
