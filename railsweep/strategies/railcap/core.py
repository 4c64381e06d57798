"""RailCap's math: one batched, pure-torch, sync-free function (method.md §3, paper Algorithm 1).

Both engine adapters (the transformers processor and the vLLM logits
processors) call :func:`apply_railcap`; they only differ in how they keep the
per-row state (trajectory, recent generated tokens, generated length).

Everything is fixed-shape tensor work (``unfold`` / ``where`` / ``gather`` /
``scatter_reduce_``): no per-row Python loop, no boolean-mask indexing, no
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

    Steps:
      1. slide a width-N window over the trajectory: window e ends at g_e;
      2. a window matches when its last n entries equal the last n generated tokens,
         the row is enabled, has generated >= n tokens and g_{e+1} exists;
      3. keep the last / first / all matching windows (``successor``);
      4. scatter ``min(l[x], val)`` onto the successors with ``amin`` (+inf = no-op).
    """
    B, T = traj.shape
    N = recent.shape[1]
    if T == 0 or N == 0:
        return logits, torch.zeros(B, dtype=torch.bool, device=logits.device)
    dev = logits.device
    # 1. windows[b, e, i] = traj[b, e - N + 1 + i] (-1 before the start: never equals a token)
    win = torch.nn.functional.pad(traj, (N - 1, 0), value=-1).unfold(1, N, 1)  # [B, T, N]
    i = torch.arange(N, device=dev)
    ignored = i[None, :] < (N - n)[:, None]  # [B, N]: positions beyond the row's own n
    # 2. match
    same = (win == recent[:, None, :]) | ignored[:, None, :]
    e = torch.arange(T, device=dev)
    enabled = (n > 0) & (gen_len >= n)
    match = same.all(-1) & enabled[:, None] & (e[None, :] + 1 < traj_len[:, None])  # [B, T]
    # 3. which successors
    last_e = torch.where(match, e[None, :], -1).amax(1)
    first_e = torch.where(match, e[None, :], T).amin(1)
    chosen = torch.where(successor == _LAST, last_e, first_e)
    keep = match & ((successor == _ALL)[:, None] | (e[None, :] == chosen[:, None]))
    index = torch.where(keep, traj.roll(-1, 1), 0)  # g_{e+1}; the wrap-around column never matches
    # 4. cap to the runner-up or ban
    second = logits.topk(2, dim=-1).values[:, 1]
    val = torch.where(mode == _BAN, torch.full_like(second, float("-inf")), second)
    triggered = (keep & (logits.gather(1, index) > val[:, None])).any(1)
    src = torch.where(keep, val[:, None], torch.full((1, 1), float("inf"), dtype=logits.dtype, device=dev))
    logits.scatter_reduce_(1, index, src, reduce="amin", include_self=True)
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
