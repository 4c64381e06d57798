"""The torch device a ``--device`` names, checked against this machine before a model loads (torch is
imported when a device is resolved, so a command can import :func:`resolve_device` at its top).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from railsweep.errors import ConfigError

if TYPE_CHECKING:
    import torch


def resolve_device(device: str) -> torch.device:
    """``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (CUDA when this machine has it, else the CPU) as a torch
    device; a ConfigError for any other name, or for CUDA on a machine without it."""
    if device not in ("auto", "cpu", "cuda") and not device.startswith("cuda:"):
        raise ConfigError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}")
    import torch

    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"device={device!r} requested but CUDA is not available")
    return torch.device(device)
