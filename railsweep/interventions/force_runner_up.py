"""A diagnostic intervention: emit the runner-up token at chosen generated steps.

Forcing a model off its most probable token at a few steps and sampling on
measures how well it recovers from a departure (``railsweep rails``: recovery
after k forced departures). At a listed step every logit but the runner-up's
(the second largest) becomes -inf, so any temperature emits the runner-up; the
other steps are untouched. Transformers engine only: it is a measurement, not a
mitigation strategy, so the vLLM engine has no adapter for it.
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
    """Keep only the runner-up logit of every active row; in place.

    Shapes: ``logits[B, V]`` float, ``active[B]`` bool. Returns ``(logits, triggered[B])``
    with triggered = active. Rows that are not active are left as they are.
    """
    import torch

    runner_up = logits.topk(2, dim=-1).indices[:, 1:2]
    kept = logits.gather(1, runner_up)
    ninf = torch.full_like(logits, float("-inf")).scatter_(1, runner_up, kept)
    logits.copy_(torch.where(active[:, None], ninf, logits))
    return logits, active.clone()
