"""RailCap, LNE ban-top and the entropy readout as vLLM logits processors, for both model runners.

The contract and the adapters are in :mod:`.vllm_adapters` (no vLLM import); :class:`_SlotState` is what both
runners share. A slot is a persistent-batch row for :class:`RailsweepV1Processor` (the CPU build's only
runner) and the runner's request slot for :class:`RailsweepV2Processor` (the GPU default: token history from
its device buffers, no per-row Python, no sync). Trigger counts and entropies stay on the device, keyed by
``(key, seed)`` (parallel-sampling children share ``extra_args`` but get ``seed + i``), until the worker
extension reads them after ``generate``: ``pop_results`` is the only method that syncs. No model-runner state
is imported, so vLLM's frontend can load the module for ``validate_params``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from vllm.v1.sample.logits_processor import BatchUpdate, process_dict_updates
from vllm.v1.sample.logits_processor import LogitsProcessor as V1LogitsProcessor
from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as V2LogitsProcessor

from railsweep.engines.vllm_adapters import (  # noqa: F401 (extra_args_for, RailCapSlots, BanTopSlots: re-exported)
    ADAPTERS,
    MAX_TRAJ,
    BanTopSlots,
    History,
    Key,
    RailCapSlots,
    RequestSettings,
    extra_args_for,
    parse_request,
    to_device,
)
from railsweep.interventions.entropy import entropy


class EntropySlots:
    """The entropy readout per slot: steps to record, the values (NaN: not recorded; made on first use)."""

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
        self.limit.index_copy_(0, idx_t, to_device(np.array(steps, np.int64), self.device, self.pin))

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
        on = self.limit.index_select(0, slots) > gen_len
        self.values[slots, pos] = torch.where(on, entropy(logits), old)


class _Ledger:
    """Retired per-request trigger counts and entropy rows, on the device until :meth:`pop`."""

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
        merged: dict[Key, list[float]] = {}  # a request retired twice (moved slot) has two partial rows
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
    """Per-slot state both runners share: each adapter's settings, the entropy readout, trigger counts. Steps:
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
        keys = [self.keys[i] for i in idx]
        self.ledger.retire(keys, self.count.index_select(0, idx_t), self.readout.take(idx_t))
        self.count.index_fill_(0, idx_t, 0)

    def flush(self) -> None:
        if not self.pending:
            return
        idx = np.fromiter(self.pending, np.int64, len(self.pending))
        settings = list(self.pending.values())
        self.pending.clear()
        idx_t = to_device(idx, self.device, self.pin)
        self._retire(idx, idx_t)  # previous occupants' results stay on the device until pop_results
        for slot, s in zip(idx, settings):
            self.keys[slot] = s.key if s is not None else None
        moved, self.moved = self.moved, {}
        carry = {}
        if moved:  # read the moved requests' state before any slot is rewritten (a swap reads both)
            dst = to_device(np.fromiter(moved, np.int64, len(moved)), self.device, self.pin)
            src = to_device(np.fromiter(moved.values(), np.int64, len(moved)), self.device, self.pin)
            carry = {t: a.snapshot(src) for t, a in self.adapters.items() if hasattr(a, "snapshot")}
        for t, adapter in self.adapters.items():
            specs = [s.spec if s is not None and type(s.spec) is t else None for s in settings]
            adapter.write(idx, idx_t, specs)
            if t in carry:
                adapter.restore(dst, carry[t])
        self.readout.write(idx, idx_t, [s.entropy if s is not None else 0 for s in settings])

    def apply(self, logits: torch.Tensor, slots: torch.Tensor, slots_np: np.ndarray, hist: History):
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


class _Runner:
    state: _SlotState

    @classmethod
    def validate_params(cls, sampling_params) -> None:
        parse_request(sampling_params)

    def pop_results(self) -> tuple[dict[Key, int], dict[Key, list[float]]]:
        """(trigger counts, entropies) per (key, seed) since the last call, between ``generate`` calls."""
        return self.state.pop_results()


class RailsweepV1Processor(_Runner, V1LogitsProcessor):
    """The V1 runner's interface. vLLM hands each request's output tokens as a live Python list: the one
    per-row Python step left reads each row's length and last ``N`` tokens."""

    DEFAULT_SLOTS = 1024  # rows held when the config does not say (max_num_seqs)

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
            return to_device(buf, dev, pin)

        def gen_len() -> torch.Tensor:
            return to_device(np.fromiter((len(o) for o in outs), np.int64, B), dev, pin)

        slots_np = np.arange(B)
        return self.state.apply(logits, to_device(slots_np, dev, pin), slots_np, History(gen_len, recent))


class RailsweepV2Processor(_Runner, V2LogitsProcessor):
    """Runner V2's interface: skip decisions and loop bounds from host mirrors; ``apply`` never syncs."""

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
