"""RailCap's incremental matcher for decode loops that see every token of their batch in order: the targets
of :func:`~railsweep.interventions.railcap.railcap_targets` for one compare per step instead of n.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from railsweep.interventions.railcap import SUCCESSOR_CODES, RailCapBatch

if TYPE_CHECKING:
    import torch

_FIRST, _ALL = SUCCESSOR_CODES["first"], SUCCESSOR_CODES["all"]


@dataclass(frozen=True)
class RunTable:
    """The per-row constants of the matcher, time-major (column b is row b: the run update shifts along the
    trajectory, so every operand is contiguous).

    ``tokens[e, b]`` is g_e of row b where a window may end at e, else -1 (past the trajectory's end, at its
    last token, in disabled rows). ``reset[0, b]`` is ``-n`` (disabled: -1), the run value when no token
    matches. ``rank[e, b]`` ranks the window to keep highest (last: e; first: T-1-e; all: 0, every match
    ties); ``succ[e, b]`` is g_{e+1}; ``free[e, b]`` whether g_{e+1} may be a target (False where spared).
    """

    tokens: torch.Tensor  # [T, B] long
    reset: torch.Tensor  # [1, B] long
    rank: torch.Tensor  # [T-1, B] long
    succ: torch.Tensor  # [T-1, B] long
    free: torch.Tensor  # [T-1, B] bool


def run_table(batch: RailCapBatch) -> RunTable:
    """The :class:`RunTable` of a packed batch (see :func:`pack_specs`)."""
    import torch

    B, T = batch.traj.shape
    dev = batch.traj.device
    e = torch.arange(T, device=dev)[:, None]
    on = batch.n > 0
    window = (e + 1 < batch.traj_len[None, :]) & on[None, :]  # g_{e+1} exists, row enabled
    tokens = torch.where(window, batch.traj.T, -1)
    reset = torch.where(on, -batch.n, -1)[None, :]
    rank = torch.where((batch.successor == _FIRST)[None, :], T - 1 - e, e)
    rank = torch.where((batch.successor == _ALL)[None, :], 0, rank)[: max(T - 1, 0)]
    succ = batch.traj.T[1:].contiguous()
    free = torch.ones_like(succ, dtype=torch.bool) if batch.free is None else batch.free.T.contiguous()
    return RunTable(tokens=tokens.contiguous(), reset=reset, rank=rank.contiguous(), succ=succ, free=free)


def start_runs(table: RunTable) -> torch.Tensor:
    """The match runs before any token: ``runs[T+1, B]`` long, all ``reset``. ``runs[e+1, b]`` is the length
    of the longest run of the latest generated tokens equal to the trajectory ending at g_e, minus n: window
    e matches when it is >= 0. Row 0 stays ``reset`` (the run before g_1)."""
    T, B = table.tokens.shape
    return table.reset.expand(T + 1, B).clone()


def advance_runs_(runs: torch.Tensor, table: RunTable, token: torch.Tensor) -> torch.Tensor:
    """Feed one generated token per row (``token[B]``) to the runs, in place: ``run_e <- run_{e-1} + 1`` where
    g_e equals it, else ``reset``; window e then matches exactly when :func:`railcap_targets`' does."""
    import torch

    same = table.tokens == token[None, :]
    torch.where(same, runs[:-1] + 1, table.reset, out=runs[1:])
    return runs


def run_targets(runs: torch.Tensor, table: RunTable, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`railcap_targets`' ``(index[R, T-1], keep[R, T-1])`` for the rows ``rows[R]``: its steps 2–3 on
    ``match = runs >= 0`` (the highest-ranked matching windows, less the targets that are not free)."""
    import torch

    T = table.tokens.shape[0]
    match = runs[1:T].index_select(1, rows) >= 0  # windows with a successor: [T-1, R]
    rank = table.rank.index_select(1, rows)
    best = torch.where(match, rank, -1).amax(0, keepdim=True)
    keep = match & (rank == best) & table.free.index_select(1, rows)
    index = torch.where(keep, table.succ.index_select(1, rows), 0)
    return index.T.contiguous(), keep.T.contiguous()
