"""RailCap (method.md §3, paper Algorithm 1): its spec, its default n, and its batched pure-torch math.

Both engine adapters find the targets from token ids, then update the logits with :func:`cap_or_ban`: the vLLM
processors recompute them every step from the last n generated tokens (:func:`railcap_targets`), the
transformers processor advances match runs by one compare per step (:mod:`.railcap_runs`, same targets).
Two restrictions, off by default (then every result is Algorithm 1's): ``stop_after_departure`` leaves a
sample alone once it has actually departed (:func:`departures`); ``spare`` lists token ids never capped or
banned, dropped after the successor is chosen (no fall-back to another n-gram). All of it is fixed-shape
tensor work (no per-row loop, boolean-mask indexing or ``.item()``): it never forces a GPU→CPU sync.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING, Literal

from railsweep.errors import ConfigError

if TYPE_CHECKING:
    import torch

DEFAULT_N = 4  # the paper's n-gram length: the one default every layer (spec, strategy, sweep, tables) uses
MAX_N = 64  # the longest n, any backend: vLLM's processors gather a row's last n tokens each step
RailCapMode = Literal["cap", "ban"]
Successor = Literal["last", "first", "all"]


def check_settings(n: object, mode: object, successor: object) -> None:
    """The one check of RailCap's settings: ConfigError naming the offending value."""
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= MAX_N:
        raise ConfigError(f"RailCap n must be an integer in [1, {MAX_N}], got n={n!r}")
    if mode not in ("cap", "ban"):
        raise ConfigError(f"RailCap mode must be 'cap' or 'ban', got mode={mode!r}")
    if successor not in ("last", "first", "all"):
        raise ConfigError(f"RailCap successor must be 'last', 'first' or 'all', got {successor!r}")


@dataclass(frozen=True)
class RailCapSpec:
    """RailCap for one request: ``trajectory`` is the greedy completion's token ids (cut at the stop
    sequence, EOS kept). Where the last ``n`` generated tokens form one of its n-grams, the successor(s) are
    capped to the runner-up logit (``mode="cap"``) or banned; a trajectory of at most ``n`` tokens changes
    nothing."""

    trajectory: tuple[int, ...]
    n: int = DEFAULT_N
    mode: RailCapMode = "cap"
    successor: Successor = "last"
    stop_after_departure: bool = False
    spare: tuple[int, ...] = ()
    # True: built from settings checked once per cell (RailCapConfig.spec), so not checked per question again
    checked: InitVar[bool] = False

    def __post_init__(self, checked: bool) -> None:
        if checked:
            return
        check_settings(self.n, self.mode, self.successor)
        stop, spare = self.stop_after_departure, self.spare
        if not isinstance(stop, bool):
            raise ConfigError(f"RailCap stop_after_departure must be true or false, got {stop!r}")
        if not isinstance(spare, tuple) or not all(
            isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in spare
        ):
            raise ConfigError(f"RailCap spare must be a tuple of token ids >= 0, got {spare!r}")

    @property
    def inert(self) -> bool:
        """True when no n-gram of the trajectory has a successor it may target (no logit changes)."""
        spare = set(self.spare)
        return len(self.trajectory) <= self.n or all(t in spare for t in self.trajectory[self.n :])


SUCCESSOR_CODES = {"last": 0, "first": 1, "all": 2}
MODE_CODES = {"cap": 0, "ban": 1}
# One request's settings as both engine adapters store them (a [4, B] long tensor, one column per request);
# n = 0: RailCap off for the row.
ROW_FIELDS = ("traj_len", "n", "successor", "mode")


def settings_row(spec: RailCapSpec | None) -> tuple[int, int, int, int]:
    """The :data:`ROW_FIELDS` of one request (all 0 for ``None``)."""
    if spec is None:
        return (0, 0, 0, 0)
    return (len(spec.trajectory), spec.n, SUCCESSOR_CODES[spec.successor], MODE_CODES[spec.mode])


def free_row(spec: RailCapSpec | None, width: int) -> list[bool]:
    """Per trajectory position e >= 1, padded to ``width`` (>= ``len(trajectory) - 1``): may g_{e+1} be a
    target (not spared); True past the trajectory's end and for ``None``."""
    spare = set(spec.spare) if spec is not None else set()
    free = [t not in spare for t in spec.trajectory[1:]] if spec is not None else []
    return free + [True] * (width - len(free))


_FIRST, _ALL, _BAN = SUCCESSOR_CODES["first"], SUCCESSOR_CODES["all"], MODE_CODES["ban"]


def apply_railcap(
    logits: torch.Tensor, traj: torch.Tensor, traj_len: torch.Tensor, recent: torch.Tensor,
    gen_len: torch.Tensor, n: torch.Tensor, successor: torch.Tensor, mode: torch.Tensor,
    free: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """Cap (or ban) the trajectory successor of the last ``n`` generated tokens, row by row.

    Shapes: ``logits[B, V]`` float (modified in place and returned); ``traj[B, T]`` long, the greedy
    trajectory padded with -1; ``traj_len[B]``; ``recent[B, N]`` long, the last N generated tokens
    right-aligned and left-padded with -1 (N >= max n); ``gen_len[B]`` tokens generated so far; ``n[B]`` (0
    disables the row); ``successor[B]`` (:data:`SUCCESSOR_CODES`); ``mode[B]`` (:data:`MODE_CODES`);
    ``free[B, T-1]`` bool (optional): whether g_{e+1} may be a target (False where spared or departed).

    With ``H = {(g_k..g_{k+n-1}) -> g_{k+n} : 1 <= k <= T-n}``, a row whose last n generated tokens are a
    key of H has each selected successor x set to ``min(l[x], v2)`` (cap; v2 = this step's runner-up logit)
    or ``-inf`` (ban). Returns ``(logits, triggered[B])``; triggered = the row's logits changed.
    """
    index, keep = railcap_targets(traj, traj_len, recent, gen_len, n, successor, free=free)
    return cap_or_ban(logits, index, keep, mode)


def railcap_targets(
    traj: torch.Tensor, traj_len: torch.Tensor, recent: torch.Tensor, gen_len: torch.Tensor, n: torch.Tensor,
    successor: torch.Tensor, free: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """The successor tokens to cap: ``(index[B, T-1] long, keep[B, T-1] bool)``; arguments as in apply_railcap.

    Column e stands for the trajectory window ending at g_e; ``keep[b, e]`` says that g_{e+1}
    (``index[b, e]``) is a target of row b. Steps:
      1. window e matches when its last n tokens equal the last n generated tokens, the row is enabled, has
         generated >= n tokens and g_{e+1} exists;
      2. keep the last / first / all matching windows (``successor``);
      3. drop the kept targets that are not ``free`` (spared tokens, departed rows).
    """
    import torch

    B, T = traj.shape
    N = recent.shape[1]
    dev = traj.device
    if T == 0 or N == 0:
        return traj.new_zeros((B, 0)), torch.zeros((B, 0), dtype=torch.bool, device=dev)
    # 1. window e ends at g_e; compare g_{e-i} with the i-th most recent token for i < n (2-D ops only)
    after = torch.arange(1, T + 1, device=dev)  # e + 1, the successor's position
    ok = (n > 0) & (gen_len >= n)
    match = (after[None, :] < traj_len[:, None]) & ok[:, None]  # [B, T]
    for i in range(min(N, T)):  # host loop over the n-gram offset, never over rows
        same = traj[:, : T - i] == recent[:, N - 1 - i, None]
        skip = (n <= i)[:, None]  # offset i lies outside this row's n-gram
        match[:, i:] &= same | skip
        if i:
            match[:, :i] &= skip  # the window would start before g_1
    match &= (n <= T)[:, None]  # an n-gram longer than the trajectory matches nothing
    # 2. rank windows so that the kept one ranks highest: e for "last", T-1-e for "first" (int16: cheap)
    e16 = torch.arange(T, dtype=torch.int16, device=dev)
    rank = torch.where((successor == _FIRST)[:, None], (T - 1 - e16)[None, :], e16[None, :])
    best = torch.where(match, rank, -1).amax(1, keepdim=True)
    keep = (match & ((rank == best) | (successor == _ALL)[:, None]))[:, : T - 1]  # g_T has no successor
    if free is not None:  # 3.
        keep &= free[:, : T - 1]
    index = torch.where(keep, traj[:, 1:], 0)  # g_{e+1}
    return index, keep


def cap_or_ban(
    logits: torch.Tensor, index: torch.Tensor, keep: torch.Tensor, mode: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``l[x] <- min(l[x], v2)`` (cap) or ``-inf`` (ban) for every kept target x, in place; returns ``(logits,
    triggered[B])``. ``v2`` is the row's runner-up logit (a tied maximum gives v2 = max: no change).

    The cap changes ``l[x]`` only when x is the unique argmax, and then sets it to the maximum over the other
    tokens. So instead of a ``topk(2)`` (slow on CPU) it takes two ``amax`` passes:
      1. m1 = row max; "hit" = kept cap targets at m1; a tie if two distinct hits;
      2. scatter -inf onto hit (and ban) targets; v2 = the row max of the rest;
      3. scatter back min(v2, m1) onto the hits (m1 on a tie: nothing changes).
    """
    import torch

    if index.shape[1] == 0:
        return logits, torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
    ninf = torch.full((), float("-inf"), dtype=logits.dtype, device=logits.device)
    pinf = torch.full((), float("inf"), dtype=logits.dtype, device=logits.device)
    ban = keep & (mode == _BAN)[:, None]
    cur = logits.gather(1, index)
    m1 = logits.amax(dim=-1, keepdim=True)
    hit = keep & ~ban & (cur >= m1)
    top = torch.where(hit, index, -1).amax(1, keepdim=True)
    tie = (hit & (index != top)).any(1, keepdim=True)  # two distinct targets share the maximum
    logits.scatter_reduce_(1, index, torch.where(hit | ban, ninf, pinf), reduce="amin", include_self=True)
    v2 = logits.amax(dim=-1, keepdim=True)
    restore = torch.where(tie, m1, torch.minimum(v2, m1))
    logits.scatter_reduce_(1, index, torch.where(hit, restore, ninf), reduce="amax", include_self=True)
    triggered = (ban & (cur > ninf)).any(1) | (hit.any(1) & (restore < m1)[:, 0])
    return logits, triggered


def departures(
    index: torch.Tensor, keep: torch.Tensor, triggered: torch.Tensor, token: torch.Tensor
) -> torch.Tensor:
    """Rows that actually departed at a step, ``[R]`` bool: RailCap changed their logits and they sampled none
    of the targets (a ban always departs; a cap unless the sample took the tied target). ``index, keep
    [R, K]``, ``triggered [R]``: that step's targets and :func:`cap_or_ban`'s result; ``token [R]``: the
    sample."""
    armed = keep & triggered[:, None]
    stayed = (armed & (index == token[:, None])).any(1)
    return armed.any(1) & ~stayed


@dataclass(frozen=True)
class RailCapBatch:
    """Per-row RailCap state as padded tensors (the arguments of :func:`apply_railcap`)."""

    traj: torch.Tensor  # [B, T] long, -1 padded
    traj_len: torch.Tensor  # [B] long
    n: torch.Tensor  # [B] long, 0 = disabled
    successor: torch.Tensor  # [B] long
    mode: torch.Tensor  # [B] long
    min_n: int  # host mirror: smallest enabled n (0 when no row is enabled)
    free: torch.Tensor | None = None  # [B, T-1] bool, g_{e+1} may be a target; None = every one may
    stop: torch.Tensor | None = None  # [B] bool, stop_after_departure; None = no row stops


def pack_specs(specs: Sequence[RailCapSpec | None], device: torch.device | str = "cpu") -> RailCapBatch:
    """Pack one spec per row (``None`` = RailCap off for that row) into padded tensors."""
    import torch

    B = len(specs)
    T = max((len(s.trajectory) for s in specs if s is not None), default=0)
    flat: list[int] = []  # one tensor from one flat list: a decode batch packs its specs every call
    rows: list[list[int]] = []
    for s in specs:
        traj_s = s.trajectory if s is not None else ()
        flat += traj_s
        flat += [-1] * (T - len(traj_s))
        rows.append(settings_row(s))
    traj = torch.tensor(flat, dtype=torch.long).view(B, T)
    meta = torch.tensor(rows, dtype=torch.long).view(B, len(ROW_FIELDS)).T.contiguous().to(device)
    free = stop = None
    if any(s is not None and s.spare for s in specs):
        width = max(T - 1, 0)
        free = torch.tensor([free_row(s, width) for s in specs], dtype=torch.bool).view(B, width).to(device)
    if any(s is not None and s.stop_after_departure for s in specs):
        stop = torch.tensor([s is not None and s.stop_after_departure for s in specs], device=device)
    min_n = min((s.n for s in specs if s is not None), default=0)
    fields = dict(zip(ROW_FIELDS, meta))  # traj_len, n, successor, mode
    return RailCapBatch(traj=traj.to(device), **fields, min_n=min_n, free=free, stop=stop)
