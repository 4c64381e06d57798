"""RailCap and LNE ban-top as vLLM logits processors, for both model runners.

Both classes are thin adapters over the pure-torch core
:func:`railsweep.strategies.railcap.core.apply_railcap` (the transformers
engine uses the same function), so the maths exists once. Per-request
settings travel in ``SamplingParams.extra_args["railsweep"]`` as plain data
(see :func:`extra_args_for`); requests without that key are left untouched.

- :class:`RailsweepV1Processor` implements the V1-runner interface
  (``VLLM_USE_V2_MODEL_RUNNER=0``; the only runner of the CPU build). vLLM
  hands it each request's output tokens as a live Python list, so the one
  per-row Python step left is reading the last ``N`` tokens of each active
  row; everything else is one batched call into the core.
- :class:`RailsweepV2Processor` implements the Model Runner V2 interface (the
  GPU default). It reads token history from the runner's device buffers and
  keeps its own per-slot state on the device: ``apply`` has no per-row Python
  and no device-to-host synchronisation; skip decisions use host mirrors.

Trigger counts (steps where a request's logits changed) and, for requests
that ask, per-step entropies of the processed logits (LNE's gauge) are kept on
the device, keyed by ``(key, seed)`` of the request (the parallel-sampling
children of one request share ``extra_args`` but get ``seed + i``), and read
through the worker extension (:mod:`railsweep.engines.vllm_worker_ext`)
after ``generate`` returns; ``pop_results`` is the only method that syncs.
The module imports no model-runner state, so vLLM's frontend can load it to
run ``validate_params``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality
from vllm.v1.sample.logits_processor import LogitsProcessor as V1LogitsProcessor
from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as V2LogitsProcessor

from railsweep.strategies.railcap.core import MODE_CODES, SUCCESSOR_CODES, apply_railcap

EXTRA_KEY = "railsweep"
NONE, RAILCAP, BAN_TOP = 0, 1, 2
MAX_N = 64  # largest RailCap n-gram accepted


@dataclass(frozen=True)
class RequestIntervention:
    """One request's parsed ``extra_args["railsweep"]``."""

    kind: int  # NONE (entropy only), RAILCAP or BAN_TOP
    key: tuple[str, int | None]  # (request key, per-sample seed) for trigger / entropy accounting
    traj: tuple[int, ...] = ()
    n: int = 0
    mode: int = 0
    successor: int = 0
    positions: int = 0
    entropy: int = 0  # > 0: record the per-step entropy of the processed logits for this many steps


def parse_intervention(sampling_params) -> RequestIntervention | None:
    """The request's intervention, or None; malformed settings raise ValueError (vLLM rejects the request)."""
    cfg = (sampling_params.extra_args or {}).get(EXTRA_KEY)
    if not cfg:
        return None
    if not isinstance(cfg, dict):
        raise ValueError(f"extra_args[{EXTRA_KEY!r}] must be a dict, got {type(cfg).__name__}")
    key = (str(cfg.get("key", "")), sampling_params.seed)
    entropy = int(cfg.get("entropy", 0))
    if entropy < 0:
        raise ValueError(f"entropy steps must be >= 0, got {entropy}")
    if "railcap" in cfg:
        rc = cfg["railcap"]
        n = int(rc.get("n", 4))
        if not 1 <= n <= MAX_N:
            raise ValueError(f"railcap n must be in [1, {MAX_N}], got {n}")
        mode, succ = rc.get("mode", "cap"), rc.get("successor", "last")
        if mode not in MODE_CODES:
            raise ValueError(f"railcap mode must be one of {sorted(MODE_CODES)}, got {mode!r}")
        if succ not in SUCCESSOR_CODES:
            raise ValueError(f"railcap successor must be one of {sorted(SUCCESSOR_CODES)}, got {succ!r}")
        traj = tuple(int(t) for t in rc.get("traj", ()))
        return RequestIntervention(RAILCAP, key, traj, n, MODE_CODES[mode], SUCCESSOR_CODES[succ], 0, entropy)
    if "ban_top" in cfg:
        positions = int(cfg["ban_top"])
        if positions < 0:
            raise ValueError(f"ban_top positions must be >= 0, got {positions}")
        return RequestIntervention(BAN_TOP, key, positions=positions, entropy=entropy)
    if entropy:
        return RequestIntervention(NONE, key, entropy=entropy)
    raise ValueError(
        f"extra_args[{EXTRA_KEY!r}] needs 'railcap', 'ban_top' or 'entropy', got keys {sorted(cfg)}"
    )


def extra_args_for(intervention, key: str, entropy_steps: int = 0) -> dict | None:
    """``SamplingParams.extra_args`` for a RailCapSpec / BanTopSpec / None, optionally recording entropies
    for ``entropy_steps`` steps (msgpack-safe plain data); None when there is nothing to do."""
    from railsweep.engines.base import BanTopSpec, RailCapSpec

    cfg: dict = {"key": key}
    if entropy_steps:
        cfg["entropy"] = int(entropy_steps)
    if isinstance(intervention, RailCapSpec):
        cfg["railcap"] = {
            "traj": [int(t) for t in intervention.trajectory],
            "n": intervention.n,
            "mode": intervention.mode,
            "successor": intervention.successor,
        }
    elif isinstance(intervention, BanTopSpec):
        cfg["ban_top"] = intervention.positions
    elif intervention is not None:
        raise TypeError(f"no vLLM logits processor for {type(intervention).__name__}")
    return {EXTRA_KEY: cfg} if len(cfg) > 1 else None


def ban_top(logits: torch.Tensor, active: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """LNE-blocking's step: set the current argmax to -inf in the ``active`` rows; (logits, triggered)."""
    top = logits.argmax(dim=-1, keepdim=True)
    cur = logits.gather(1, top)
    logits.scatter_(1, top, torch.where(active[:, None], torch.full_like(cur, float("-inf")), cur))
    return logits, active


def _to_device(a: np.ndarray, device: torch.device, pin: bool) -> torch.Tensor:
    t = torch.from_numpy(a)
    if pin and device.type != "cpu":
        t = t.pin_memory()
    return t.to(device, non_blocking=True)


def entropy(logits: torch.Tensor) -> torch.Tensor:
    """Full-vocabulary entropy (nats) per row of float logits (the transformers engine's formula)."""
    return torch.special.entr(torch.softmax(logits.float(), dim=-1)).sum(-1)


Key = tuple[str, int | None]


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
        merged: dict[Key, list[float]] = {}  # a request retired twice (batch re-layout) has two partial rows
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


class RailsweepV1Processor(V1LogitsProcessor):
    """RailCap / ban-top / entropy recording for the V1 model runner (rows = persistent-batch indices)."""

    @classmethod
    def validate_params(cls, sampling_params) -> None:
        parse_intervention(sampling_params)

    def __init__(self, vllm_config, device: torch.device, is_pin_memory: bool) -> None:
        self.device, self.pin = torch.device(device), bool(is_pin_memory)
        self.rows: dict[int, tuple[RequestIntervention, list[int]]] = {}  # row -> (settings, live output ids)
        self.ledger = _Ledger()
        self._dirty = False
        self._stack: dict = {}  # batched tensors for the current batch layout

    def is_argmax_invariant(self) -> bool:
        return False  # a capped or banned argmax changes greedy output

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        """Apply removed, added, moved in that order (vLLM's contract); rebuild lazily in ``apply``."""
        if batch_update is None:
            return
        for row in batch_update.removed:
            self._dirty |= self.rows.pop(row, None) is not None
        for row, params, _prompt, out_ids in batch_update.added:
            cfg = parse_intervention(params)
            if cfg is not None and cfg.kind == RAILCAP and len(cfg.traj) <= cfg.n:
                cfg = None if not cfg.entropy else RequestIntervention(NONE, cfg.key, entropy=cfg.entropy)
            if cfg is not None:
                self.rows[row] = (cfg, out_ids)
                self._dirty = True
            elif self.rows.pop(row, None) is not None:
                self._dirty = True
        for a, b, direction in batch_update.moved:
            ea, eb = self.rows.pop(a, None), self.rows.pop(b, None)
            if ea is not None:
                self.rows[b] = ea
            if eb is not None and direction == MoveDirectionality.SWAP:
                self.rows[a] = eb
            self._dirty |= ea is not None or eb is not None

    def _retire_all(self) -> None:
        for st in self._stack.values():
            self.ledger.retire(st["keys"], st["count"], st.get("ent"))

    def _rebuild(self) -> None:
        """New batch layout: retire the old counters, stack per-row settings into device tensors."""
        self._retire_all()
        self._stack, self._dirty = {}, False
        dev, pin = self.device, self.pin
        items = sorted(self.rows.items())
        rc = [(r, c, o) for r, (c, o) in items if c.kind == RAILCAP]
        bt = [(r, c, o) for r, (c, o) in items if c.kind == BAN_TOP]
        en = [(r, c, o) for r, (c, o) in items if c.entropy]
        if rc:
            width = max(len(c.traj) for _, c, _ in rc)
            traj = np.full((len(rc), width), -1, np.int64)
            for i, (_, c, _) in enumerate(rc):
                traj[i, : len(c.traj)] = c.traj
            meta = _to_device(
                np.array([[r, len(c.traj), c.n, c.successor, c.mode] for r, c, _ in rc]).T, dev, pin
            )
            self._stack["rc"] = {
                "rows": meta[0], "traj": _to_device(traj, dev, pin), "traj_len": meta[1], "n": meta[2],
                "successor": meta[3], "mode": meta[4], "N": max(c.n for _, c, _ in rc),
            }  # fmt: skip
        if bt:
            meta = _to_device(np.array([[r, c.positions] for r, c, _ in bt], np.int64).T, dev, pin)
            self._stack["bt"] = {"rows": meta[0], "positions": meta[1]}
        if en:
            width = max(c.entropy for _, c, _ in en)
            meta = _to_device(np.array([[r, c.entropy] for r, c, _ in en], np.int64).T, dev, pin)
            self._stack["en"] = {
                "rows": meta[0], "limit": meta[1], "ent": torch.full((len(en), width), float("nan"), device=dev),
            }  # fmt: skip
        for name, part in (("rc", rc), ("bt", bt), ("en", en)):
            if part:
                st = self._stack[name]
                st["outs"], st["keys"] = [o for _, _, o in part], [c.key for _, c, _ in part]
                st["count"] = torch.zeros(len(part), dtype=torch.int64, device=dev)

    def _gen_len(self, outs: list[list[int]]) -> torch.Tensor:
        return _to_device(np.fromiter((len(o) for o in outs), np.int64, len(outs)), self.device, self.pin)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        if self._dirty:
            self._rebuild()
        if not self.rows:
            return logits
        if (st := self._stack.get("rc")) is not None:
            N, outs = st["N"], st["outs"]
            recent = np.full((len(outs), N), -1, np.int64)  # right-aligned, left-padded with -1
            for i, o in enumerate(outs):  # the V1 runner exposes outputs only as Python lists
                tail = o[-N:]
                if tail:
                    recent[i, N - len(tail) :] = tail
            sub = logits.index_select(0, st["rows"])
            sub, trig = apply_railcap(
                sub, st["traj"], st["traj_len"], _to_device(recent, self.device, self.pin),
                self._gen_len(outs), st["n"], st["successor"], st["mode"],
            )  # fmt: skip
            logits.index_copy_(0, st["rows"], sub)
            st["count"] += trig.to(torch.int64)
        if (st := self._stack.get("bt")) is not None:
            sub, trig = ban_top(
                logits.index_select(0, st["rows"]), self._gen_len(st["outs"]) < st["positions"]
            )
            logits.index_copy_(0, st["rows"], sub)
            st["count"] += trig.to(torch.int64)
        if (st := self._stack.get("en")) is not None:  # after every edit: entropy of the processed logits
            ent, gen_len = st["ent"], self._gen_len(st["outs"])
            pos = gen_len.clamp(max=ent.shape[1] - 1)[:, None]
            h = torch.where(
                gen_len < st["limit"], entropy(logits.index_select(0, st["rows"])), ent.gather(1, pos)[:, 0]
            )
            ent.scatter_(1, pos, h[:, None])
        return logits

    def pop_results(self) -> tuple[dict[Key, int], dict[Key, list[float]]]:
        """(trigger counts, entropies) per (key, seed) since the last call; call between ``generate`` calls."""
        self._retire_all()
        for st in self._stack.values():
            st["count"] = torch.zeros_like(st["count"])
            if "ent" in st:
                st["ent"] = torch.full_like(st["ent"], float("nan"))
        return self.ledger.pop()


class RailsweepV2Processor(V2LogitsProcessor):
    """RailCap / ban-top / entropy recording for Model Runner V2 (state keyed by persistent request slot)."""

    MAX_TRAJ = 4096  # longest greedy trajectory accepted (bounded by max_model_len too)

    @classmethod
    def validate_params(cls, sampling_params) -> None:
        cfg = parse_intervention(sampling_params)
        if cfg is not None and len(cfg.traj) > cls.MAX_TRAJ:
            raise ValueError(f"railcap trajectory has {len(cfg.traj)} tokens, more than {cls.MAX_TRAJ}")

    def __init__(self, vllm_config, req_states) -> None:
        self.rs = req_states
        dev, R = torch.device(req_states.device), req_states.max_num_reqs
        max_len = getattr(getattr(vllm_config, "model_config", None), "max_model_len", None) or self.MAX_TRAJ
        self.W = min(self.MAX_TRAJ, int(max_len))
        self.device, self.pin = dev, dev.type != "cpu"
        self.traj = torch.full((R, self.W), -1, dtype=torch.int64, device=dev)
        # rows: traj_len, n (0 = no RailCap), successor, mode, ban-top positions, entropy steps
        self.meta = torch.zeros((6, R), dtype=torch.int64, device=dev)
        self.count = torch.zeros(R, dtype=torch.int64, device=dev)
        self.ent: torch.Tensor | None = None  # [R, W] float, allocated on the first entropy request
        self.kind_np = np.zeros(R, np.int64)  # host mirrors for skip decisions and loop bounds
        self.n_np = np.zeros(R, np.int64)
        self.len_np = np.zeros(R, np.int64)
        self.ent_np = np.zeros(R, bool)
        self.keys: list[Key | None] = [None] * R
        self._pending: dict[int, RequestIntervention | None] = {}
        self.ledger = _Ledger()

    def add_request(self, req_idx: int, sampling_params) -> bool:
        cfg = parse_intervention(sampling_params)
        if cfg is not None and cfg.kind == RAILCAP and len(cfg.traj) <= cfg.n:  # no n-gram has a successor
            cfg = None if not cfg.entropy else RequestIntervention(NONE, cfg.key, entropy=cfg.entropy)
        self._pending[req_idx] = cfg
        self.kind_np[req_idx] = cfg.kind if cfg else NONE
        self.n_np[req_idx] = cfg.n if cfg else 0
        self.len_np[req_idx] = len(cfg.traj) if cfg else 0
        self.ent_np[req_idx] = bool(cfg and cfg.entropy)
        return cfg is not None

    def apply_staged_writes(self) -> None:
        """One batched host-to-device write per step for every slot (re)filled since the last step."""
        if not self._pending:
            return
        idx = np.fromiter(self._pending, np.int64, len(self._pending))
        rows = np.full((len(idx), self.W), -1, np.int64)
        meta = np.zeros((6, len(idx)), np.int64)
        old_keys = [self.keys[i] for i in idx]
        for r, (slot, cfg) in enumerate(self._pending.items()):
            self.keys[slot] = cfg.key if cfg else None
            if cfg is not None:
                rows[r, : len(cfg.traj)] = cfg.traj
                meta[:, r] = (len(cfg.traj), cfg.n, cfg.successor, cfg.mode, cfg.positions, cfg.entropy)
        self._pending.clear()
        if self.ent is None and meta[5].any():
            self.ent = torch.full((len(self.keys), self.W), float("nan"), device=self.device)
        idx_t = _to_device(idx, self.device, self.pin)
        # previous occupants' results stay on the device until pop_results
        ents = self.ent.index_select(0, idx_t) if self.ent is not None else None
        self.ledger.retire(old_keys, self.count.index_select(0, idx_t), ents)
        self.count.index_fill_(0, idx_t, 0)
        if self.ent is not None:
            self.ent.index_fill_(0, idx_t, float("nan"))
        self.traj.index_copy_(0, idx_t, _to_device(rows, self.device, self.pin))
        self.meta.index_copy_(1, idx_t, _to_device(meta, self.device, self.pin))

    def apply(self, logits: torch.Tensor, ctx) -> torch.Tensor:
        req_slots = ctx.idx_mapping_np
        kinds = self.kind_np[req_slots]
        has_rc, has_bt = bool((kinds == RAILCAP).any()), bool((kinds == BAN_TOP).any())
        has_en = bool(self.ent_np[req_slots].any())
        if not (has_rc or has_bt or has_en):  # host-only decision
            return logits
        slots = ctx.expanded_idx_mapping.long()
        total = self.rs.total_len.gpu[slots].long()  # prompt + committed outputs
        prompt = self.rs.prompt_len.gpu[slots].long()  # re-read every step (UVA ring buffer)
        gen_len = total - prompt
        meta = self.meta.index_select(1, slots)
        triggered = torch.zeros_like(gen_len, dtype=torch.bool)
        if has_rc:
            active = kinds == RAILCAP
            N, K = int(self.n_np[req_slots][active].max()), int(self.len_np[req_slots][active].max())
            all_ids = self.rs.all_token_ids.gpu
            j = torch.arange(N, device=logits.device)
            pos = total[:, None] - N + j[None, :]
            tok = all_ids[slots[:, None], pos.clamp(0, all_ids.shape[1] - 1)].long()
            recent = torch.where(pos >= prompt[:, None], tok, torch.full_like(tok, -1))
            logits, trig = apply_railcap(  # meta[1] (n) is 0 for rows without RailCap: untouched
                logits,
                self.traj.index_select(0, slots)[:, :K],
                meta[0],
                recent,
                gen_len,
                meta[1],
                meta[2],
                meta[3],
            )
            triggered |= trig
        if has_bt:
            logits, trig = ban_top(logits, gen_len < meta[4])
            triggered |= trig
        self.count.index_add_(0, slots, triggered.to(torch.int64))
        if has_en:  # rows without entropy recording rewrite their current value (fixed shapes, no sync)
            pos = gen_len.clamp(0, self.W - 1)
            old = self.ent[slots, pos]
            self.ent[slots, pos] = torch.where((meta[5] > gen_len), entropy(logits), old)
        return logits

    def pop_results(self) -> tuple[dict[Key, int], dict[Key, list[float]]]:
        """(trigger counts, entropies) per (key, seed) since the last call; call between ``generate`` calls."""
        live = [i for i, k in enumerate(self.keys) if k is not None]
        if live:
            idx = torch.tensor(live, dtype=torch.int64, device=self.device)
            ents = self.ent.index_select(0, idx) if self.ent is not None else None
            self.ledger.retire([self.keys[i] for i in live], self.count.index_select(0, idx), ents)
            self.count.index_fill_(0, idx, 0)
            if self.ent is not None:
                self.ent.index_fill_(0, idx, float("nan"))
        return self.ledger.pop()
