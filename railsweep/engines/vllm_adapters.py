"""The vLLM backend's intervention table and wire contract; torch and numpy only, so it loads without vLLM.

Per-request settings travel in ``SamplingParams.extra_args["railsweep"]`` as msgpack-safe data
(:func:`extra_args_for` writes, :func:`parse_request` reads and validates). :data:`ADAPTERS` is the one table
from spec type to adapter: a thin layer over the intervention's pure-torch math, with per-slot settings on the
device and host mirrors for skip decisions; a new intervention needs nothing in :mod:`.vllm_processors`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from railsweep.errors import ConfigError
from railsweep.interventions.ban_top import BanTopSpec, ban_top
from railsweep.interventions.railcap import (
    ROW_FIELDS,
    RailCapSpec,
    cap_or_ban,
    departures,
    free_row,
    railcap_targets,
    settings_row,
)

EXTRA_KEY = "railsweep"
MAX_TRAJ = 4096  # longest trajectory (and most entropy steps) a slot holds; max_model_len bounds it too
Key = tuple[str, int | None]


@dataclass(frozen=True)
class RequestSettings:
    """One request's parsed ``extra_args["railsweep"]``."""

    key: Key  # (request key, per-sample seed) for trigger / entropy accounting
    spec: Any = None  # a spec type of ADAPTERS; None = entropy readout only
    entropy: int = 0  # > 0: record the per-step entropy of the processed logits for this many steps


def parse_request(sampling_params) -> RequestSettings | None:
    """The request's settings, or None; malformed settings raise ValueError (vLLM rejects the request).
    An intervention that cannot change any logit (``inert``) is dropped: the request is left untouched."""
    cfg = (sampling_params.extra_args or {}).get(EXTRA_KEY)
    if not cfg:
        return None
    if not isinstance(cfg, dict):
        raise ValueError(f"extra_args[{EXTRA_KEY!r}] must be a dict, got {type(cfg).__name__}")
    entropy_steps = int(cfg.get("entropy", 0))
    if entropy_steps < 0:
        raise ValueError(f"entropy steps must be >= 0, got {entropy_steps}")
    named = [a for a in ADAPTERS.values() if a.wire in cfg]
    if len(named) > 1:
        raise ValueError(
            f"extra_args[{EXTRA_KEY!r}] names more than one intervention: {[a.wire for a in named]}"
        )
    if not named and not entropy_steps:
        wires = ", ".join(repr(a.wire) for a in ADAPTERS.values())
        raise ValueError(f"extra_args[{EXTRA_KEY!r}] needs {wires} or 'entropy', got keys {sorted(cfg)}")
    spec = None
    if named:
        try:
            spec = named[0].from_wire(cfg[named[0].wire])
        except (TypeError, KeyError, AttributeError) as e:
            raise ValueError(f"malformed {named[0].wire!r} settings {cfg[named[0].wire]!r}: {e}") from e
        if named[0].inert(spec):
            spec = None
    if spec is None and not entropy_steps:
        return None
    return RequestSettings((str(cfg.get("key", "")), sampling_params.seed), spec, entropy_steps)


def extra_args_for(intervention, key: str, entropy_steps: int = 0) -> dict | None:
    """``SamplingParams.extra_args`` for a spec (or None) and ``entropy_steps``; None for nothing to do."""
    cfg: dict = {"key": key}
    if entropy_steps:
        cfg["entropy"] = int(entropy_steps)
    if intervention is not None:
        adapter = ADAPTERS.get(type(intervention))
        if adapter is None:
            raise TypeError(f"no vLLM logits processor for {type(intervention).__name__}")
        cfg[adapter.wire] = adapter.to_wire(intervention)
    return {EXTRA_KEY: cfg} if len(cfg) > 1 else None


def to_device(a: np.ndarray, device: torch.device, pin: bool) -> torch.Tensor:
    t = torch.from_numpy(a)
    if pin and device.type != "cpu":
        t = t.pin_memory()
    return t.to(device, non_blocking=True)


class History:
    """This step's token history, built on demand: ``gen_len[B]``, ``recent(N)`` (last N, -1 padded)."""

    def __init__(self, gen_len: Callable[[], torch.Tensor], recent: Callable[[int], torch.Tensor]):
        self._gen_len, self.recent = gen_len, recent

    @functools.cached_property
    def gen_len(self) -> torch.Tensor:
        return self._gen_len()


class RailCapSlots:
    """RailCap per slot: trajectory and settings on the device, n and trajectory length on the host;
    ``free[slot, e]`` (g_{e+1} not spared). ``stop_after_departure`` state moves with a request to another
    slot (:meth:`snapshot` / :meth:`restore`): ``armed[slot, e]`` (the last changed step's targets, until
    the next step reads the token sampled) and ``departed[slot]``; it assumes one token per step."""

    wire = "railcap"

    @staticmethod
    def to_wire(spec: RailCapSpec) -> dict:
        traj = [int(t) for t in spec.trajectory]
        out = {"traj": traj, "n": spec.n, "mode": spec.mode, "successor": spec.successor}
        if spec.stop_after_departure:  # restrictions travel only when on: the default wire is unchanged
            out["stop"] = True
        if spec.spare:
            out["spare"] = [int(t) for t in spec.spare]
        return out

    @classmethod
    def from_wire(cls, value: dict) -> RailCapSpec:
        keep = {k: value[k] for k in ("n", "mode", "successor") if k in value}
        if "stop" in value:
            keep["stop_after_departure"] = value["stop"]
        if "spare" in value:
            keep["spare"] = tuple(value["spare"])
        try:
            spec = RailCapSpec(tuple(int(t) for t in value.get("traj", ())), **keep)
        except ConfigError as e:  # n outside [1, MAX_N], an unknown mode, ...
            raise ValueError(str(e)) from e
        if len(spec.trajectory) > MAX_TRAJ:
            raise ValueError(f"railcap trajectory has {len(spec.trajectory)} tokens, more than {MAX_TRAJ}")
        return spec

    @staticmethod
    def inert(spec: RailCapSpec) -> bool:
        return spec.inert

    def __init__(self, slots: int, width: int, device: torch.device, pin: bool):
        self.device, self.pin, self.width = device, pin, width
        self.traj = torch.full((slots, width), -1, dtype=torch.int64, device=device)
        self.meta = torch.zeros((len(ROW_FIELDS), slots), dtype=torch.int64, device=device)  # ROW_FIELDS
        self.n_np = np.zeros(slots, np.int64)
        self.len_np = np.zeros(slots, np.int64)
        self.free = torch.ones((slots, width), dtype=torch.bool, device=device)
        self.spare_np = np.zeros(slots, bool)
        self.stop = torch.zeros(slots, dtype=torch.bool, device=device)
        self.stop_np = np.zeros(slots, bool)
        self.armed = torch.zeros((slots, width), dtype=torch.bool, device=device)
        self.departed = torch.zeros(slots, dtype=torch.bool, device=device)
        self._touched = False  # restriction state was ever written: from then on (re)filled slots reset it

    def write(self, idx: np.ndarray, idx_t: torch.Tensor, specs: list[RailCapSpec | None]) -> None:
        rows = np.full((len(idx), self.width), -1, np.int64)
        meta = np.zeros((len(ROW_FIELDS), len(idx)), np.int64)
        free = np.ones((len(idx), self.width), bool)
        for r, s in enumerate(specs):
            meta[:, r] = settings_row(s)
            if s is not None:
                rows[r, : len(s.trajectory)] = s.trajectory
                if s.spare:
                    free[r] = free_row(s, self.width)
        self.len_np[idx], self.n_np[idx] = meta[0], meta[1]  # ROW_FIELDS: traj_len, n
        self.spare_np[idx] = [s is not None and bool(s.spare) for s in specs]
        self.stop_np[idx] = [s is not None and s.stop_after_departure for s in specs]
        self.traj.index_copy_(0, idx_t, to_device(rows, self.device, self.pin))
        self.meta.index_copy_(1, idx_t, to_device(meta, self.device, self.pin))
        if self.spare_np.any() or self.stop_np.any() or self._touched:
            self._touched = True
            self.free.index_copy_(0, idx_t, to_device(free, self.device, self.pin))
            self.stop.index_copy_(0, idx_t, to_device(self.stop_np[idx], self.device, self.pin))
            self.armed.index_fill_(0, idx_t, False)
            self.departed.index_fill_(0, idx_t, False)

    def snapshot(self, src_t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The departure state of the slots a request leaves (read before they are rewritten)."""
        return self.armed.index_select(0, src_t), self.departed.index_select(0, src_t)

    def restore(self, dst_t: torch.Tensor, snap: tuple[torch.Tensor, torch.Tensor]) -> None:
        """Put a moved request's departure state into its new slots (after :meth:`write`)."""
        self.armed.index_copy_(0, dst_t, snap[0])
        self.departed.index_copy_(0, dst_t, snap[1])

    def active(self, slots_np: np.ndarray) -> bool:
        return bool(self.n_np[slots_np].any())

    def apply(self, logits: torch.Tensor, slots: torch.Tensor, slots_np: np.ndarray, hist: History):
        n_np = self.n_np[slots_np]
        on = n_np > 0
        N, K = int(n_np[on].max()), int(self.len_np[slots_np][on].max())  # rows without RailCap: n = 0
        meta = dict(zip(ROW_FIELDS, self.meta.index_select(1, slots)))
        traj = self.traj.index_select(0, slots)[:, :K]
        free = self.free.index_select(0, slots)[:, : max(K - 1, 0)] if self.spare_np[slots_np].any() else None
        stop = bool(self.stop_np[slots_np].any())
        if stop:
            gone = self._settle(slots, traj, hist)[:, None]
            free = ~gone.expand(-1, max(K - 1, 0)) if free is None else free & ~gone
        index, keep = railcap_targets(traj, meta["traj_len"], hist.recent(N), hist.gen_len, meta["n"],
                                      meta["successor"], free=free)  # fmt: skip
        logits, trig = cap_or_ban(logits, index, keep, meta["mode"])
        if stop:  # arm this step's targets where the logits changed; read back at the slot's next step
            armed = torch.zeros((len(slots_np), self.width), dtype=torch.bool, device=logits.device)
            armed[:, : keep.shape[1]] = keep & (trig & self.stop.index_select(0, slots))[:, None]
            self.armed.index_copy_(0, slots, armed)
        return logits, trig

    def _settle(self, slots: torch.Tensor, traj: torch.Tensor, hist: History) -> torch.Tensor:
        """``departed[R]`` of these slots after reading the token each sampled at its last armed step."""
        K = traj.shape[1]
        armed = self.armed.index_select(0, slots)[:, : max(K - 1, 0)]
        newest = hist.recent(1)[:, 0]
        gone = self.departed.index_select(0, slots) | departures(traj[:, 1:], armed, armed.any(1), newest)
        self.departed.index_copy_(0, slots, gone)
        return gone


class BanTopSlots:
    """LNE-blocking's ban-top per slot: the number of banned positions."""

    wire = "ban_top"

    @staticmethod
    def to_wire(spec: BanTopSpec) -> int:
        return int(spec.positions)

    @staticmethod
    def from_wire(value: int) -> BanTopSpec:
        return BanTopSpec(int(value))

    @staticmethod
    def inert(spec: BanTopSpec) -> bool:
        return False

    def __init__(self, slots: int, width: int, device: torch.device, pin: bool):
        self.device, self.pin = device, pin
        self.positions = torch.zeros(slots, dtype=torch.int64, device=device)
        self.on_np = np.zeros(slots, bool)

    def write(self, idx: np.ndarray, idx_t: torch.Tensor, specs: list[BanTopSpec | None]) -> None:
        pos = np.array([s.positions if s is not None else 0 for s in specs], np.int64)
        self.on_np[idx] = [s is not None for s in specs]
        self.positions.index_copy_(0, idx_t, to_device(pos, self.device, self.pin))

    def active(self, slots_np: np.ndarray) -> bool:
        return bool(self.on_np[slots_np].any())

    def apply(self, logits: torch.Tensor, slots: torch.Tensor, slots_np: np.ndarray, hist: History):
        return ban_top(logits, self.positions.index_select(0, slots), hist.gen_len)


# The one table of this backend: intervention spec type -> adapter (applied in this order, before the readout).
ADAPTERS: dict[type, Any] = {RailCapSpec: RailCapSlots, BanTopSpec: BanTopSlots}
