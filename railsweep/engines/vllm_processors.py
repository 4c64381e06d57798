"""RailCap, LNE ban-top and the entropy readout as vLLM logits processors, for both model runners.

Laid out like vLLM's own ``vllm/v1/sample/logits_processor/``: the contract
first, then the implementations.

- Contract. Per-request settings travel in ``SamplingParams.extra_args["railsweep"]``
  as plain, msgpack-safe data (:func:`extra_args_for` writes them,
  :func:`parse_request` reads and validates them; requests without the key are
  untouched). :data:`ADAPTERS` is the one table from intervention spec type to
  its adapter: a new intervention needs one entry there and nothing else here.
- Adapters (:class:`RailCapSlots`, :class:`BanTopSlots`): one intervention each,
  a thin layer over its pure-torch math in :mod:`railsweep.interventions`; each
  keeps its per-slot settings on the device and host mirrors for skip decisions.
  :class:`EntropySlots` records the per-step entropy of the processed logits.
- :class:`_SlotState`: what both runners share (the adapters, one batched
  host-to-device write per step for the slots (re)filled since the last one,
  per-slot trigger counts) and :class:`_Ledger` (results of retired slots).
- The two vLLM interfaces: :class:`RailsweepV1Processor` (``VLLM_USE_V2_MODEL_RUNNER=0``,
  the only runner of the CPU build; a slot is a persistent-batch row, kept with
  vLLM's ``process_dict_updates``) and :class:`RailsweepV2Processor` (Model
  Runner V2, the GPU default; a slot is the runner's request slot, token history
  read from its device buffers, no per-row Python and no device-to-host sync).

Trigger counts (steps where a request's logits changed) and entropies are kept
on the device, keyed by ``(key, seed)`` of the request (the parallel-sampling
children of one request share ``extra_args`` but get ``seed + i``), and read
through the worker extension (:mod:`railsweep.engines.vllm_worker_ext`) after
``generate`` returns; ``pop_results`` is the only method that syncs. The module
imports no model-runner state, so vLLM's frontend can load it to run
``validate_params``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from vllm.v1.sample.logits_processor import BatchUpdate, process_dict_updates
from vllm.v1.sample.logits_processor import LogitsProcessor as V1LogitsProcessor
from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as V2LogitsProcessor

from railsweep.errors import ConfigError
from railsweep.interventions.ban_top import BanTopSpec, ban_top
from railsweep.interventions.entropy import entropy
from railsweep.interventions.railcap import (
    MODE_CODES,
    SUCCESSOR_CODES,
    RailCapSpec,
    cap_or_ban,
    departures,
    railcap_targets,
)

EXTRA_KEY = "railsweep"
MAX_TRAJ = (
    4096  # longest greedy trajectory (and most entropy steps) a slot holds; max_model_len bounds it too
)
Key = tuple[str, int | None]

# ------------------------------------------------------------------------------------------ contract


@dataclass(frozen=True)
class RequestSettings:
    """One request's parsed ``extra_args["railsweep"]``: at most one intervention, an optional readout."""

    key: Key  # (request key, per-sample seed) for trigger / entropy accounting
    spec: Any = None  # a spec type of ADAPTERS; None = entropy readout only
    entropy: int = 0  # > 0: record the per-step entropy of the processed logits for this many steps


def parse_request(sampling_params) -> RequestSettings | None:
    """The request's settings, or None; malformed settings raise ValueError (vLLM rejects the request).

    An intervention that cannot change any logit (``inert``, e.g. a RailCap trajectory no
    longer than n) is dropped here: such a request is untouched like one without settings."""
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
    """``SamplingParams.extra_args`` for a spec of :data:`ADAPTERS` (or None), optionally recording
    entropies for ``entropy_steps`` steps; None when there is nothing to do."""
    cfg: dict = {"key": key}
    if entropy_steps:
        cfg["entropy"] = int(entropy_steps)
    if intervention is not None:
        adapter = ADAPTERS.get(type(intervention))
        if adapter is None:
            raise TypeError(f"no vLLM logits processor for {type(intervention).__name__}")
        cfg[adapter.wire] = adapter.to_wire(intervention)
    return {EXTRA_KEY: cfg} if len(cfg) > 1 else None


# ------------------------------------------------------------------------------------------ adapters


def _to_device(a: np.ndarray, device: torch.device, pin: bool) -> torch.Tensor:
    t = torch.from_numpy(a)
    if pin and device.type != "cpu":
        t = t.pin_memory()
    return t.to(device, non_blocking=True)


class History:
    """This step's token history of the rows: ``gen_len[B]`` and ``recent(N)``, built by the runner on demand."""

    def __init__(self, gen_len: Callable[[], torch.Tensor], recent: Callable[[int], torch.Tensor]):
        self._gen_len, self.recent = (
            gen_len,
            recent,
        )  # recent(N): last N generated tokens, right-aligned, -1 padded
        self._cached: torch.Tensor | None = None

    @property
    def gen_len(self) -> torch.Tensor:
        if self._cached is None:
            self._cached = self._gen_len()
        return self._cached


class RailCapSlots:
    """RailCap per slot: trajectory and settings on the device; n and trajectory length mirrored on the host.

    The restrictions: ``free[slot, e]`` (g_{e+1} is not spared) and, for ``stop_after_departure``, the
    slot's own state, carried along when vLLM moves a request to another slot (:meth:`snapshot` /
    :meth:`restore`): ``armed[slot, e]`` (the targets of the slot's last step whose logits changed, until
    the token it then sampled is read back at its next step) and ``departed[slot]``. That check assumes
    one generated token per step (no speculative decoding)."""

    wire = "railcap"
    MAX_N = 64  # largest n-gram accepted

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
        except ConfigError as e:
            raise ValueError(str(e)) from e
        if spec.n > cls.MAX_N:
            raise ValueError(f"railcap n must be in [1, {cls.MAX_N}], got {spec.n}")
        if len(spec.trajectory) > MAX_TRAJ:
            raise ValueError(f"railcap trajectory has {len(spec.trajectory)} tokens, more than {MAX_TRAJ}")
        return spec

    @staticmethod
    def inert(spec: RailCapSpec) -> bool:
        return spec.inert

    def __init__(self, slots: int, width: int, device: torch.device, pin: bool):
        self.device, self.pin, self.width = device, pin, width
        self.traj = torch.full((slots, width), -1, dtype=torch.int64, device=device)
        self.meta = torch.zeros(
            (4, slots), dtype=torch.int64, device=device
        )  # traj_len, n (0 = off), successor, mode
        self.n_np = np.zeros(slots, np.int64)
        self.len_np = np.zeros(slots, np.int64)
        self.free = torch.ones((slots, width), dtype=torch.bool, device=device)
        self.spare_np = np.zeros(slots, bool)
        self.stop = torch.zeros(slots, dtype=torch.bool, device=device)
        self.stop_np = np.zeros(slots, bool)
        self.armed = torch.zeros((slots, width), dtype=torch.bool, device=device)
        self.departed = torch.zeros(slots, dtype=torch.bool, device=device)

    def write(self, idx: np.ndarray, idx_t: torch.Tensor, specs: list[RailCapSpec | None]) -> None:
        rows = np.full((len(idx), self.width), -1, np.int64)
        meta = np.zeros((4, len(idx)), np.int64)
        free = np.ones((len(idx), self.width), bool)
        for r, s in enumerate(specs):
            if s is not None:
                rows[r, : len(s.trajectory)] = s.trajectory
                meta[:, r] = (len(s.trajectory), s.n, SUCCESSOR_CODES[s.successor], MODE_CODES[s.mode])
                if s.spare:
                    free[r, : len(s.trajectory) - 1] = s.free()
        self.n_np[idx], self.len_np[idx] = meta[1], meta[0]
        self.spare_np[idx] = [s is not None and bool(s.spare) for s in specs]
        self.stop_np[idx] = [s is not None and s.stop_after_departure for s in specs]
        self.traj.index_copy_(0, idx_t, _to_device(rows, self.device, self.pin))
        self.meta.index_copy_(1, idx_t, _to_device(meta, self.device, self.pin))
        if self.spare_np.any() or self.stop_np.any() or self._touched:
            self._touched = True  # from now on keep the restriction state of (re)filled slots clean
            self.free.index_copy_(0, idx_t, _to_device(free, self.device, self.pin))
            self.stop.index_copy_(0, idx_t, _to_device(self.stop_np[idx], self.device, self.pin))
            self.armed.index_fill_(0, idx_t, False)
            self.departed.index_fill_(0, idx_t, False)

    _touched = False

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
        N, K = int(n_np[on].max()), int(self.len_np[slots_np][on].max())
        meta = self.meta.index_select(1, slots)  # rows without RailCap have n = 0: untouched
        traj = self.traj.index_select(0, slots)[:, :K]
        free = self.free.index_select(0, slots)[:, : max(K - 1, 0)] if self.spare_np[slots_np].any() else None
        stop = bool(self.stop_np[slots_np].any())
        if stop:
            gone = self._settle(slots, traj, hist)[:, None]
            free = ~gone.expand(-1, max(K - 1, 0)) if free is None else free & ~gone
        index, keep = railcap_targets(
            traj, meta[0], hist.recent(N), hist.gen_len, meta[1], meta[2], free=free
        )
        logits, trig = cap_or_ban(logits, index, keep, meta[3])
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
    """LNE-blocking's ban-top per slot: the number of banned positions, on the device and mirrored on the host."""

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
        self.positions.index_copy_(0, idx_t, _to_device(pos, self.device, self.pin))

    def active(self, slots_np: np.ndarray) -> bool:
        return bool(self.on_np[slots_np].any())

    def apply(self, logits: torch.Tensor, slots: torch.Tensor, slots_np: np.ndarray, hist: History):
        return ban_top(logits, self.positions.index_select(0, slots), hist.gen_len)


# The one table of this backend: intervention spec type -> adapter (applied in this order, before the readout).
ADAPTERS: dict[type, Any] = {RailCapSpec: RailCapSlots, BanTopSpec: BanTopSlots}


class EntropySlots:
    """The entropy readout per slot: steps to record (host mirror: on/off) and the recorded values (NaN = not
    recorded), allocated on the first request that asks."""

    def __init__(self, slots: int, width: int, device: torch.device, pin: bool):
        self.device, self.pin, self.width = device, pin, width
        self.limit = torch.zeros(slots, dtype=torch.int64, device=device)
        self.on_np = np.zeros(slots, bool)
        self.values: torch.Tensor | None = None  # [slots, width] float

    def write(self, idx: np.ndarray, idx_t: torch.Tensor, steps: list[int]) -> None:
        """Called after :meth:`take` emptied these slots."""
        self.on_np[idx] = [s > 0 for s in steps]
        if self.values is None and any(steps):
            self.values = torch.full((len(self.on_np), self.width), float("nan"), device=self.device)
        self.limit.index_copy_(0, idx_t, _to_device(np.array(steps, np.int64), self.device, self.pin))

    def take(self, idx_t: torch.Tensor) -> torch.Tensor | None:
        """The recorded rows of these slots (still on the device); the slots restart empty."""
        if self.values is None:
            return None
        rows = self.values.index_select(0, idx_t)
        self.values.index_fill_(0, idx_t, float("nan"))
        return rows

    def active(self, slots_np: np.ndarray) -> bool:
        return bool(self.on_np[slots_np].any())

    def record(self, logits: torch.Tensor, slots: torch.Tensor, hist: History) -> None:
        """Rows without recording rewrite their current value (fixed shapes, no sync)."""
        gen_len = hist.gen_len
        pos = gen_len.clamp(0, self.width - 1)
        old = self.values[slots, pos]
        self.values[slots, pos] = torch.where(
            self.limit.index_select(0, slots) > gen_len, entropy(logits), old
        )


class _Ledger:
    """Per-request trigger counts and entropy rows retired with their keys while still on the device;
    summed / read on the host only in :meth:`pop` (between ``generate`` calls)."""

    def __init__(self) -> None:
        self._counts: list[tuple[list[Key | None], torch.Tensor]] = []
        self._ents: list[tuple[list[Key | None], torch.Tensor]] = []

    def retire(self, keys: list[Key | None], counts: torch.Tensor, ents: torch.Tensor | None = None) -> None:
        if any(k is not None for k in keys):
            self._counts.append((keys, counts))
            if ents is not None:
                self._ents.append((keys, ents))

    def pop(self) -> tuple[dict[Key, int], dict[Key, list[float]]]:
        triggers: dict[Key, int] = {}
        for keys, counts in self._counts:
            for k, c in zip(keys, counts.tolist()):
                if k is not None:
                    triggers[k] = triggers.get(k, 0) + int(c)
        merged: dict[
            Key, list[float]
        ] = {}  # a request retired twice (moved to another slot) has two partial rows
        for keys, rows in self._ents:
            for k, row in zip(keys, rows.tolist()):
                if k is None:
                    continue
                acc = merged.setdefault(k, [])
                acc.extend([math.nan] * (len(row) - len(acc)))
                for i, x in enumerate(row):
                    if x == x:  # NaN = step not recorded here
                        acc[i] = x
        ents = {k: [x for x in v if x == x] for k, v in merged.items()}
        self._counts, self._ents = [], []
        return triggers, ents


class _SlotState:
    """Per-slot state both runners share: each adapter's settings, the entropy readout, trigger counts.

    Steps of one decode step:
      1. ``stage(slot, settings)`` for every slot (re)filled (host only);
      2. ``flush()``: retire the previous occupants' results to the ledger, one batched write per adapter;
      3. ``apply(logits, slots, slots_np, history)``: every active adapter in table order, then the readout.
    """

    def __init__(self, slots: int, width: int, device: torch.device, pin: bool):
        self.device, self.pin = device, pin
        self.adapters = {t: cls(slots, width, device, pin) for t, cls in ADAPTERS.items()}
        self.readout = EntropySlots(slots, width, device, pin)
        self.count = torch.zeros(slots, dtype=torch.int64, device=device)
        self.keys: list[Key | None] = [None] * slots
        self.pending: dict[int, RequestSettings | None] = {}
        self.moved: dict[int, int] = {}  # new slot -> old slot of a request vLLM moved
        self.ledger = _Ledger()

    def stage(self, slot: int, settings: RequestSettings | None, moved_from: int | None = None) -> None:
        """``moved_from``: the slot the same request held before (its per-request state moves with it)."""
        self.pending[slot] = settings
        if moved_from is not None:
            self.moved[slot] = moved_from

    def _retire(self, idx: np.ndarray, idx_t: torch.Tensor) -> None:
        self.ledger.retire(
            [self.keys[i] for i in idx], self.count.index_select(0, idx_t), self.readout.take(idx_t)
        )
        self.count.index_fill_(0, idx_t, 0)

    def flush(self) -> None:
        if not self.pending:
            return
        idx = np.fromiter(self.pending, np.int64, len(self.pending))
        settings = list(self.pending.values())
        self.pending.clear()
        idx_t = _to_device(idx, self.device, self.pin)
        self._retire(idx, idx_t)  # previous occupants' results stay on the device until pop_results
        for slot, s in zip(idx, settings):
            self.keys[slot] = s.key if s is not None else None
        moved, self.moved = self.moved, {}
        carry = {}
        if moved:  # read the moved requests' state before any slot is rewritten (a swap reads both)
            dst = _to_device(np.fromiter(moved, np.int64, len(moved)), self.device, self.pin)
            src = _to_device(np.fromiter(moved.values(), np.int64, len(moved)), self.device, self.pin)
            carry = {t: a.snapshot(src) for t, a in self.adapters.items() if hasattr(a, "snapshot")}
        for t, adapter in self.adapters.items():
            adapter.write(
                idx, idx_t, [s.spec if s is not None and type(s.spec) is t else None for s in settings]
            )
            if t in carry:
                adapter.restore(dst, carry[t])
        self.readout.write(idx, idx_t, [s.entropy if s is not None else 0 for s in settings])

    def apply(
        self, logits: torch.Tensor, slots: torch.Tensor, slots_np: np.ndarray, hist: History
    ) -> torch.Tensor:
        active = [a for a in self.adapters.values() if a.active(slots_np)]
        if active:
            triggered = torch.zeros(logits.shape[0], dtype=torch.bool, device=logits.device)
            for adapter in active:
                logits, trig = adapter.apply(logits, slots, slots_np, hist)
                triggered |= trig
            self.count.index_add_(0, slots, triggered.to(torch.int64))
        if self.readout.active(slots_np):  # after every edit: entropy of the processed logits
            self.readout.record(logits, slots, hist)
        return logits

    def pop_results(self) -> tuple[dict[Key, int], dict[Key, list[float]]]:
        live = np.array([i for i, k in enumerate(self.keys) if k is not None], np.int64)
        if len(live):
            # the runner made these tensors under inference mode; resetting them in place needs it too
            with torch.inference_mode():
                self._retire(live, torch.from_numpy(live).to(self.device))
        return self.ledger.pop()


def _slots_and_width(vllm_config, default_slots: int) -> tuple[int, int]:
    slots = getattr(getattr(vllm_config, "scheduler_config", None), "max_num_seqs", None) or default_slots
    max_len = getattr(getattr(vllm_config, "model_config", None), "max_model_len", None) or MAX_TRAJ
    return int(slots), min(MAX_TRAJ, int(max_len))


# ------------------------------------------------------------------------------------------ runners


class RailsweepV1Processor(V1LogitsProcessor):
    """The V1-runner interface (slots = persistent-batch rows). vLLM hands each request's output tokens as a
    live Python list, so the one per-row Python step left is reading each row's length and last ``N`` tokens."""

    DEFAULT_SLOTS = 1024  # rows held when the config does not say (max_num_seqs)

    @classmethod
    def validate_params(cls, sampling_params) -> None:
        parse_request(sampling_params)

    def __init__(self, vllm_config, device: torch.device, is_pin_memory: bool) -> None:
        device = torch.device(device)
        slots, width = _slots_and_width(vllm_config, self.DEFAULT_SLOTS)
        self.state = _SlotState(slots, width, device, bool(is_pin_memory))
        self.rows: dict[int, tuple[RequestSettings, list[int]]] = {}  # row -> (settings, live output ids)
        self._staged: dict[int, tuple[RequestSettings, list[int]]] = {}  # what the slots hold now

    def is_argmax_invariant(self) -> bool:
        return False  # a capped or banned argmax changes greedy output

    @staticmethod
    def _new_row(params, _prompt_ids, output_ids):
        settings = parse_request(params)
        return None if settings is None else (settings, output_ids)

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        """vLLM's own helper applies removed / added / moved; changed rows are staged for the next ``apply``."""
        before = {id(v): row for row, v in self._staged.items()}  # where each request sat
        if not process_dict_updates(self.rows, batch_update, self._new_row):
            return
        for row in self._staged.keys() | self.rows.keys():
            now = self.rows.get(row)
            if now is not self._staged.get(row):
                moved_from = before.get(id(now)) if now is not None else None
                self.state.stage(row, now[0] if now is not None else None, moved_from)
                if now is None:
                    del self._staged[row]
                else:
                    self._staged[row] = now

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        self.state.flush()
        if not self.rows:
            return logits
        B = logits.shape[0]
        outs = [self.rows[r][1] if r in self.rows else () for r in range(B)]
        dev, pin = self.state.device, self.state.pin

        def recent(N: int) -> torch.Tensor:
            buf = np.full((B, N), -1, np.int64)  # right-aligned, left-padded with -1
            for i, o in enumerate(outs):
                tail = o[-N:]
                if tail:
                    buf[i, N - len(tail) :] = tail
            return _to_device(buf, dev, pin)

        def gen_len() -> torch.Tensor:
            return _to_device(np.fromiter((len(o) for o in outs), np.int64, B), dev, pin)

        slots_np = np.arange(B)
        return self.state.apply(logits, _to_device(slots_np, dev, pin), slots_np, History(gen_len, recent))

    def pop_results(self) -> tuple[dict[Key, int], dict[Key, list[float]]]:
        """(trigger counts, entropies) per (key, seed) since the last call; call between ``generate`` calls."""
        return self.state.pop_results()


class RailsweepV2Processor(V2LogitsProcessor):
    """The Model Runner V2 interface (slots = the runner's request slots): token history from the runner's
    device buffers, skip decisions and loop bounds from host mirrors; ``apply`` never syncs."""

    @classmethod
    def validate_params(cls, sampling_params) -> None:
        parse_request(sampling_params)

    def __init__(self, vllm_config, req_states) -> None:
        self.rs = req_states
        dev = torch.device(req_states.device)
        _, width = _slots_and_width(vllm_config, req_states.max_num_reqs)
        self.state = _SlotState(req_states.max_num_reqs, width, dev, dev.type != "cpu")

    def add_request(self, req_idx: int, sampling_params) -> bool:
        settings = parse_request(sampling_params)
        self.state.stage(req_idx, settings)
        return settings is not None

    def apply_staged_writes(self) -> None:
        """One batched host-to-device write per step for every slot (re)filled since the last step."""
        self.state.flush()

    def apply(self, logits: torch.Tensor, ctx) -> torch.Tensor:
        slots = ctx.expanded_idx_mapping.long()
        rs, lens = self.rs, []

        def total_prompt() -> tuple[torch.Tensor, torch.Tensor]:
            if not lens:  # prompt + committed outputs; prompt lengths re-read every step (UVA ring buffer)
                lens.extend((rs.total_len.gpu[slots].long(), rs.prompt_len.gpu[slots].long()))
            return lens[0], lens[1]

        def gen_len() -> torch.Tensor:
            total, prompt = total_prompt()
            return total - prompt

        def recent(N: int) -> torch.Tensor:
            total, prompt = total_prompt()
            all_ids = rs.all_token_ids.gpu
            pos = total[:, None] - N + torch.arange(N, device=logits.device)[None, :]
            tok = all_ids[slots[:, None], pos.clamp(0, all_ids.shape[1] - 1)].long()
            return torch.where(pos >= prompt[:, None], tok, torch.full_like(tok, -1))

        return self.state.apply(logits, slots, ctx.idx_mapping_np, History(gen_len, recent))

    def pop_results(self) -> tuple[dict[Key, int], dict[Key, list[float]]]:
        """(trigger counts, entropies) per (key, seed) since the last call; call between ``generate`` calls."""
        return self.state.pop_results()
