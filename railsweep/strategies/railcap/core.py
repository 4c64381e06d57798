"""RailCap's math: one batched, pure-torch, sync-free function (method.md §3, paper Algorithm 1).

Both engine adapters (the transformers processor and the vLLM logits
processors) call :func:`apply_railcap` or its two halves (:func:`railcap_targets`
from token ids, then :func:`cap_or_ban` on the logits); they only differ in how
they keep the per-row state (trajectory, recent generated tokens, generated length).

Everything is fixed-shape tensor work (shifted compares / ``where`` /
``gather`` / ``scatter_reduce_``): no per-row Python loop, no boolean-mask indexing, no
``.item()``, so the function never forces a GPU→CPU synchronisation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from railsweep.engines.base import RailCapSpec

SUCCESSOR_CODES = {"last": 0, "first": 1, "all": 2}
MODE_CODES = {"cap": 0, "ban": 1}
_LAST, _FIRST, _ALL = 0, 1, 2
_BAN = 1


def apply_railcap(
    logits: torch.Tensor,
    traj: torch.Tensor,
    traj_len: torch.Tensor,
    recent: torch.Tensor,
    gen_len: torch.Tensor,
    n: torch.Tensor,
    successor: torch.Tensor,
    mode: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cap (or ban) the trajectory successor of the last ``n`` generated tokens, row by row.

    Shapes: ``logits[B, V]`` float (modified in place and returned);
    ``traj[B, T]`` long, the greedy trajectory padded with -1; ``traj_len[B]``;
    ``recent[B, N]`` long, the last N generated tokens right-aligned and
    left-padded with -1 (N >= max n); ``gen_len[B]`` tokens generated so far;
    ``n[B]`` (0 disables the row); ``successor[B]`` (:data:`SUCCESSOR_CODES`);
    ``mode[B]`` (:data:`MODE_CODES`).

    With ``H = {(g_k..g_{k+n-1}) -> g_{k+n} : 1 <= k <= T-n}``, a row whose last
    n generated tokens are a key of H has each selected successor x set to
    ``min(l[x], v2)`` (cap; v2 = runner-up logit of this step) or ``-inf`` (ban).
    Returns ``(logits, triggered[B])``; triggered = the row's logits changed.

    It is :func:`railcap_targets` (which successors, from token ids only)
    followed by :func:`cap_or_ban` (the logits update); an adapter may skip or
    row-subset the second half when no row has a target.
    """
    index, keep = railcap_targets(traj, traj_len, recent, gen_len, n, successor)
    return cap_or_ban(logits, index, keep, mode)


def railcap_targets(
    traj: torch.Tensor,
    traj_len: torch.Tensor,
    recent: torch.Tensor,
    gen_len: torch.Tensor,
    n: torch.Tensor,
    successor: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The successor tokens to cap: ``(index[B, T] long, keep[B, T] bool)``; arguments as in apply_railcap.

    Column e stands for the trajectory window ending at g_e; ``keep[b, e]``
    says that g_{e+1} (``index[b, e]``) is a target of row b.

    Steps:
      1. window e matches when g_{e-i} equals the i-th most recent generated token for
         every i < n, the row is enabled, has generated >= n tokens and g_{e+1} exists;
      2. keep the last / first / all matching windows (``successor``).
    """
    B, T = traj.shape
    N = recent.shape[1]
    dev = traj.device
    e = torch.arange(T, device=dev)
    enabled = (n > 0) & (gen_len >= n)
    match = enabled[:, None] & (e[None, :] + 1 < traj_len[:, None])  # [B, T]
    for i in range(min(N, T)):  # host loop over the n-gram offset, never over rows
        back = traj if i == 0 else torch.nn.functional.pad(traj[:, : T - i], (i, 0), value=-1)  # g_{e-i}
        match &= (back == recent[:, N - 1 - i, None]) | (n <= i)[:, None]
    if N > T:  # windows longer than the trajectory match nothing
        match &= (n <= T)[:, None]
    last_e = torch.where(match, e[None, :], -1).amax(1) if T else torch.zeros(B, dtype=torch.long, device=dev)
    first_e = torch.where(match, e[None, :], T).amin(1) if T else last_e
    chosen = torch.where(successor == _LAST, last_e, first_e)
    keep = match & ((successor == _ALL)[:, None] | (e[None, :] == chosen[:, None]))
    index = torch.where(keep, traj.roll(-1, 1), 0)  # g_{e+1}; the wrap-around column never matches
    return index, keep


def cap_or_ban(
    logits: torch.Tensor, index: torch.Tensor, keep: torch.Tensor, mode: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``l[x] <- min(l[x], v2)`` (cap) or ``-inf`` (ban) for every kept target x; in place.

    ``v2`` is the runner-up logit of the row (``topk(2)``, so a tied maximum
    gives v2 = max and the cap changes nothing). Returns ``(logits, triggered[B])``.
    """
    if index.shape[1] == 0:
        return logits, torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
    second = logits.topk(2, dim=-1).values[:, 1]
    val = torch.where(mode == _BAN, torch.full_like(second, float("-inf")), second)
    triggered = (keep & (logits.gather(1, index) > val[:, None])).any(1)
    inf = torch.full((1, 1), float("inf"), dtype=logits.dtype, device=logits.device)
    logits.scatter_reduce_(1, index, torch.where(keep, val[:, None], inf), reduce="amin", include_self=True)
    return logits, triggered


@dataclass(frozen=True)
class RailCapBatch:
    """Per-row RailCap state as padded tensors (the arguments of :func:`apply_railcap`)."""

    traj: torch.Tensor  # [B, T] long, -1 padded
    traj_len: torch.Tensor  # [B] long
    n: torch.Tensor  # [B] long, 0 = disabled
    successor: torch.Tensor  # [B] long
    mode: torch.Tensor  # [B] long
    max_n: int  # host mirror: width of the recent-token buffer
    min_n: int  # host mirror: smallest enabled n (0 when no row is enabled)


def pack_specs(specs: Sequence[RailCapSpec | None], device: torch.device | str = "cpu") -> RailCapBatch:
    """Pack one spec per row (``None`` = RailCap off for that row) into padded tensors."""
    B = len(specs)
    T = max((len(s.trajectory) for s in specs if s is not None), default=0)
    traj = torch.full((B, T), -1, dtype=torch.long)
    meta = torch.zeros((4, B), dtype=torch.long)
    for r, s in enumerate(specs):
        if s is None:
            continue
        traj[r, : len(s.trajectory)] = torch.tensor(s.trajectory, dtype=torch.long)
        meta[:, r] = torch.tensor(
            [len(s.trajectory), s.n, SUCCESSOR_CODES[s.successor], MODE_CODES[s.mode]], dtype=torch.long
        )
    ns = [s.n for s in specs if s is not None]
    meta = meta.to(device)
    return RailCapBatch(
        traj=traj.to(device),
        traj_len=meta[0],
        n=meta[1],
        successor=meta[2],
        mode=meta[3],
        max_n=max(ns, default=0),
        min_n=min(ns, default=0),
    )
