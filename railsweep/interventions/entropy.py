"""The per-step entropy readout (LNE's gauge): read the processed logits, change nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Full-vocabulary entropy (nats) per row: ``logits[B, V]`` (any float dtype) -> ``[B]`` float32; both
    engines record it after the intervention and before temperature."""
    import torch

    return torch.special.entr(torch.softmax(logits.float(), dim=-1)).sum(-1)
