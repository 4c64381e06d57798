"""LNE-blocking's intervention: ban the current top-1 token at each of the first k generated positions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from railsweep.errors import ConfigError

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class BanTopSpec:
    """Ban the current top-1 token at each of the first ``positions`` generated positions."""

    positions: int

    def __post_init__(self) -> None:
        if self.positions < 0:
            raise ConfigError(f"BanTop positions must be >= 0, got {self.positions}")


def ban_top(logits: torch.Tensor, positions: torch.Tensor, gen_len: torch.Tensor) -> tuple:
    """Ban the current top-1 token of every row with ``gen_len < positions``; ``(logits, triggered[B])``.

    Shapes: ``logits[B, V]`` float (modified in place), ``positions[B]``, ``gen_len[B]`` long (tokens so far).
    Sync-free: the ban is an ``amin`` scatter of -inf (active rows) or +inf (no-op rows).
    """
    import torch

    active = gen_len < positions
    top = logits.argmax(dim=-1, keepdim=True)
    triggered = active & (logits.gather(1, top)[:, 0] > float("-inf"))
    inf = torch.tensor(float("inf"), dtype=logits.dtype, device=logits.device)
    src = torch.where(active, -inf, inf)[:, None]
    logits.scatter_reduce_(1, top, src, reduce="amin", include_self=True)
    return logits, triggered
