"""Shared-prefix ("cascade") KV cache and attention for the transformers engine's decode loop.

Why: the prompts share a long prefix (8-shot exemplars, ~500 of ~550 tokens) and ``DynamicCache`` re-concatenates
every row's cache at every step (75 % of the miniature world's decode time). Here the prefix's keys and values
are stored once, each row's suffix in preallocated buffers, and one softmax attends to both.

Steps of one decode batch (:class:`CascadeStepper`):
  1. run the rows' longest common token prefix (leaving each row >= 1 own token) once, batch 1;
  2. prefill each distinct suffix once, left-padded (positions continue after the prefix), then copy its
     cache rows to every row that shares it;
  3. each step: write one token per cached row at the next column; attend to prefix + own valid columns;
  4. once finished rows are an eighth of the cache, gather the live rows into a spare buffer that takes the
     old one's place (no allocation after the first time; finished rows get zero logits).

Only :data:`~railsweep.engines.model_support.SUPPORTED_TYPES` come here, and only without a sliding window
shorter than the sequence or attention-logit soft-capping.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import nn

from railsweep.engines._hf_decode import distinct, left_pad
from railsweep.engines.hf_compat import lm_step
from railsweep.engines.model_support import base_model

IMPLEMENTATION = "railsweep_cascade"
Twin = Callable[[Callable[[bool], torch.Tensor]], torch.Tensor]
_MAX_SCORES = 1 << 26  # attention scores materialised at once (floats); longer prefills go in query chunks
_local = threading.local()


class RowCache:
    """Per-layer key/value buffers ``[slots, kv_heads, capacity, head_dim]`` plus the shared prefix; the
    first ``rows`` slots are live. ``update`` writes columns ``start .. start + T`` and returns views of
    ``0 .. start + T`` (no copy); ``valid[rows, capacity]`` marks real tokens; ``slots`` (the most rows ever
    held) lets :meth:`select` expand a deduplicated prefill in place. Two models of the same shape may share
    one cache (rows, columns and validity): the second's layers at ``layer_offset`` = its layer count."""

    is_compileable = False

    def __init__(self, n_layers: int, rows: int, capacity: int, device: torch.device,
                 slots: int | None = None):
        self.rows, self.capacity = rows, capacity
        self.slots = max(rows, slots or 0)
        self.keys: list[torch.Tensor | None] = [None] * n_layers
        self.values: list[torch.Tensor | None] = [None] * n_layers
        self.spare: torch.Tensor | None = None  # one more buffer: select gathers into it, then swaps
        self.prefix: list[tuple[torch.Tensor, torch.Tensor] | None] | None = None  # per layer [kv_heads, P, D]
        self.prefix_len = 0
        self.start = 0
        self.layer_offset = 0  # added to a module's layer index: which model's layers this forward writes
        self.valid = torch.zeros((rows, capacity), dtype=torch.bool, device=device)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args: Any,
               **kwargs: Any):  # fmt: skip
        layer_idx += self.layer_offset
        if self.keys[layer_idx] is None:
            # Columns are written before they are read (prefill, then one per step), so no zero fill.
            shape = (self.slots, key_states.shape[1], self.capacity, key_states.shape[-1])
            self.keys[layer_idx] = key_states.new_empty(shape)
            self.values[layer_idx] = value_states.new_empty(shape)
        k, v = self.keys[layer_idx][: self.rows], self.values[layer_idx][: self.rows]
        end = self.start + key_states.shape[2]
        k[:, :, self.start : end] = key_states
        v[:, :, self.start : end] = value_states
        return k[:, :, :end], v[:, :, :end]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.prefix_len + self.start

    def select(self, index: torch.Tensor) -> None:
        """Keep (or repeat, up to ``slots``) the rows ``index``: filled columns only, into the spare buffer,
        which then swaps with the buffer."""
        n = len(index)
        if n > self.slots:
            raise ValueError(f"RowCache.select: {n} rows do not fit the cache's {self.slots} slots")
        for store in (self.keys, self.values):
            for i, buf in enumerate(store):
                if buf is None:
                    continue
                if self.spare is None or self.spare.shape != buf.shape:
                    self.spare = torch.empty_like(buf)
                torch.index_select(buf[: self.rows, :, : self.start], 0, index,
                                   out=self.spare[:n, :, : self.start])  # fmt: skip
                store[i], self.spare = self.spare, buf
        self.valid = self.valid[index]
        self.rows = n


def _attend(q, key, value, prefix, valid, first: int) -> torch.Tensor:
    """Attention of queries at suffix columns ``first ..`` (already scaled) over prefix + suffix.

    ``q[B, Hkv, g, T, D]``, ``key/value[B, Hkv, L, D]``, ``prefix`` = (K, V) ``[Hkv, P, D]`` or None,
    ``valid[B, L]``. Key column j is visible to query column c when it is valid and j <= c, and always when
    j == c (a padding query never sees nothing). Returns ``[B, Hkv, g, T, D]``.
    """
    B, Hkv, g, T, D = q.shape
    L = key.shape[2]
    cols = torch.arange(L, device=q.device)
    qcols = torch.arange(first, first + T, device=q.device)
    visible = (valid[:, None, :] & (cols[None, :] <= qcols[:, None])[None]) | (
        cols[None, :] == qcols[:, None]
    )[None]
    flat = q.reshape(B, Hkv, g * T, D)
    s_own = torch.matmul(flat, key.transpose(-1, -2)).view(B, Hkv, g, T, L)
    s_own = s_own.masked_fill(~visible[:, None, None], float("-inf"))
    if prefix is None:
        w = torch.softmax(s_own.float(), dim=-1).to(value.dtype)
        return torch.matmul(w.view(B, Hkv, g * T, L), value).view(B, Hkv, g, T, D)
    pk, pv = prefix
    P = pk.shape[1]
    across = flat.transpose(0, 1).reshape(Hkv, B * g * T, D)
    s_pre = torch.matmul(across, pk.transpose(-1, -2)).view(Hkv, B, g, T, P).permute(1, 0, 2, 3, 4)
    w = torch.softmax(torch.cat([s_pre, s_own], dim=-1).float(), dim=-1).to(value.dtype)
    out = torch.matmul(w[..., P:].reshape(B, Hkv, g * T, L), value).view(B, Hkv, g, T, D)
    w_pre = w[..., :P].permute(1, 0, 2, 3, 4).reshape(Hkv, B * g * T, P)
    return out + torch.matmul(w_pre, pv).view(Hkv, B, g, T, D).permute(1, 0, 2, 3, 4)


def cascade_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers attention-interface function: ``query[B, Hq, T, D]`` over :meth:`RowCache.update`'s
    suffix views and the active cache's prefix; returns ``([B, T, Hq, D], None)`` like transformers' sdpa."""
    cache: RowCache | None = getattr(_local, "cache", None)
    if cache is None:
        raise RuntimeError(f"{IMPLEMENTATION} attention called outside a railsweep CascadeStepper forward")
    B, Hq, T, D = query.shape
    Hkv = key.shape[1]
    g = Hq // Hkv
    q = query.reshape(B, Hkv, g, T, D) * (D**-0.5 if scaling is None else scaling)
    prefix = cache.prefix[module.layer_idx + cache.layer_offset] if cache.prefix is not None else None
    valid = cache.valid[:, : key.shape[2]]
    first = key.shape[2] - T
    width = key.shape[2] + (prefix[0].shape[1] if prefix is not None else 0)
    chunk = max(1, _MAX_SCORES // max(1, B * Hq * width))
    parts = [
        _attend(q[:, :, :, t : t + chunk], key, value, prefix, valid, first + t) for t in range(0, T, chunk)
    ]
    out = parts[0] if len(parts) == 1 else torch.cat(parts, dim=3)
    return out.reshape(B, Hq, T, D).transpose(1, 2).contiguous(), None


def _register() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(IMPLEMENTATION, cascade_attention)


_register()


def common_prefix_len(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the longest common token prefix, leaving every prompt at least one token of its own."""
    first = prompts[0]
    n = min(len(p) for p in prompts) - 1
    for p in prompts[1:]:
        k = 0
        while k < n and p[k] == first[k]:
            k += 1
        n = k
    return max(n, 0)


class CascadeStepper:
    """The decode loop's :class:`~railsweep.engines._hf_decode.Stepper` on the cascade path. ``twin``: each
    step is two forwards of the model, as two models with their own layers in one cache (Shortcut's reference
    and patched target): ``twin(forward)`` calls ``forward(True)`` for the second model's layers, then
    returns ``forward(False)``'s logits (:meth:`railsweep.engines.neuron_patch.NeuronPatch.run`)."""

    MIN_PREFIX = 16  # a shorter common prefix is not worth its own cache

    def __init__(self, model: nn.Module, device: torch.device, pad_id: int, max_new_tokens: int,
                 dedupe: bool = True, min_prefix: int = MIN_PREFIX, drop_fraction: float = 0.125,
                 twin: Twin | None = None):  # fmt: skip
        self.model, self.device, self.pad_id = model, device, pad_id
        self.max_new, self.dedupe = max_new_tokens, dedupe
        self.min_prefix, self.drop_fraction, self.twin = min_prefix, drop_fraction, twin
        self.config = base_model(model).config
        self.n_layers = self.config.num_hidden_layers
        self.cache_layers = self.n_layers * (1 if twin is None else 2)

    def _run(self, cache: RowCache, ids: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        previous = self.config._attn_implementation
        self.config._attn_implementation = IMPLEMENTATION
        _local.cache = cache

        def forward(second: bool) -> torch.Tensor:
            cache.layer_offset = self.n_layers if second else 0
            return lm_step(self.model, ids, None, pos, cache)[0]

        try:
            logits = forward(False) if self.twin is None else self.twin(forward)
        finally:
            self.config._attn_implementation = previous
            _local.cache = None
            cache.layer_offset = 0
        cache.start += ids.shape[1]
        return logits

    def _prefix(self, ids: Sequence[int]) -> list[tuple[torch.Tensor, torch.Tensor] | None]:
        P = len(ids)
        cache = RowCache(self.cache_layers, 1, P, self.device)
        cache.valid[:] = True
        positions = torch.arange(P, device=self.device)[None]
        self._run(cache, torch.tensor([list(ids)], device=self.device), positions)
        return [None if k is None else (k[0], v[0]) for k, v in zip(cache.keys, cache.values)]

    def prefill(self, prompts: Sequence[list[int]]) -> torch.Tensor:
        B = len(prompts)
        owner, firsts = distinct(prompts) if self.dedupe else (list(range(B)), list(range(B)))
        P = common_prefix_len([prompts[r] for r in firsts])  # the m samples of a prompt share it once
        if P < self.min_prefix:
            P = 0
        unique = [prompts[r][P:] for r in firsts]
        ids, mask = left_pad(unique, self.pad_id, self.device)
        valid, width = mask.bool(), ids.shape[1]
        pos = P + (mask.cumsum(-1) - 1).clamp(min=0)

        cache = RowCache(self.cache_layers, len(unique), width + self.max_new, self.device, slots=B)
        if P:
            cache.prefix, cache.prefix_len = self._prefix(prompts[0][:P]), P
        cache.valid[:, :width] = valid
        logits = self._run(cache, ids, pos)
        index = torch.tensor(owner, device=self.device)
        if len(unique) < B:
            cache.select(index)
            logits = logits[index]
        self.cache, self.B = cache, B
        self.rows = torch.arange(B, device=self.device)  # batch row of each cache row
        self.last_pos = pos[index, -1]
        return logits

    def step(self, next_ids: torch.Tensor, finished: torch.Tensor) -> torch.Tensor:
        cache = self.cache
        live = ~finished[self.rows]
        dead = int(live.numel() - live.sum())
        if dead and dead >= self.drop_fraction * live.numel():
            keep = live.nonzero().flatten()
            cache.select(keep)
            self.rows, self.last_pos = self.rows[keep], self.last_pos[keep]
        self.last_pos = self.last_pos + 1
        cache.valid[:, cache.start] = True
        logits = self._run(cache, next_ids[self.rows][:, None], self.last_pos[:, None])
        if logits.shape[0] == self.B:
            return logits
        full = logits.new_zeros((self.B, logits.shape[-1]))
        full[self.rows] = logits
        return full
