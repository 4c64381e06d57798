"""The transformers engine's batched, KV-cached, left-padded decode loop.

One call decodes a batch of rows (one sample of one request each) sharing a step function and an intervention
kind. Finished rows stay in the loop's tensors, so every row has generated exactly ``step`` tokens at step
``step``; :class:`PaddedStepper` keeps them in the KV cache (masked), :mod:`._cascade` drops them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import torch

from railsweep.engines._sampling import SeededSampler
from railsweep.engines.base import Sample
from railsweep.interventions.entropy import entropy

if TYPE_CHECKING:
    from railsweep.engines.hf_processors import StepProcessor

Forward = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Any], tuple[torch.Tensor, Any]]


@dataclass
class Row:
    prompt_ids: list[int]
    seed: int
    sample_idx: int
    temperature: float
    max_new_tokens: int
    stop: tuple[str, ...]
    return_entropy: bool


class StopTable:
    """Which tokens can complete a stop string (only rows that just emitted one get detokenized): those whose
    text contains its last character, is empty or a partial character (U+FFFD); every token when it ends in a
    space (which may be emitted implicitly)."""

    def __init__(self, tokenizer: Any, vocab: int, device: torch.device):
        self.tokenizer, self.vocab, self.device = tokenizer, vocab, device
        self._pieces: list[str] | None = None
        self._tables: dict[frozenset[str], torch.Tensor] = {}

    def candidates(self, stops: frozenset[str]) -> torch.Tensor:
        table = self._tables.get(stops)
        if table is None:
            if any(s[-1].isspace() and s[-1] != "\n" for s in stops):
                table = torch.ones(self.vocab, dtype=torch.bool)
            else:
                if self._pieces is None:
                    tok = self.tokenizer
                    self._pieces = [
                        tok.convert_tokens_to_string([t]) if t is not None else ""
                        for t in tok.convert_ids_to_tokens(list(range(min(self.vocab, len(tok)))))
                    ]
                last = {s[-1] for s in stops}
                flags = [(not p) or ("\ufffd" in p) or any(c in p for c in last) for p in self._pieces]
                flags += [False] * (self.vocab - len(flags))
                table = torch.tensor(flags, dtype=torch.bool)
            table = self._tables[stops] = table.to(self.device)
        return table

    def for_rows(self, rows: Sequence[Row]) -> torch.Tensor | None:
        """:meth:`candidates` for every stop string of ``rows``; None when no row has one."""
        stops = frozenset(s for r in rows for s in r.stop)
        return self.candidates(stops) if stops else None


def left_pad(prompts: Sequence[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    P = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), P), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), P), dtype=torch.long)
    for r, p in enumerate(prompts):
        ids[r, P - len(p) :] = torch.tensor(p, dtype=torch.long)
        mask[r, P - len(p) :] = 1
    return ids.to(device), mask.to(device)


def distinct(prompts: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """(``owner[row]`` = index of its distinct prompt, first row of each distinct prompt)."""
    index: dict[tuple[int, ...], int] = {}
    owner, firsts = [], []
    for r, p in enumerate(prompts):
        u = index.setdefault(tuple(p), len(index))
        if u == len(firsts):
            firsts.append(r)
        owner.append(u)
    return owner, firsts


def _prefill(forward: Forward, rows: Sequence[list[int]], pad_id: int, device, dedupe: bool):
    """Prefill; with ``dedupe`` each distinct prompt runs once, its cache rows copied to its rows."""
    ids, mask = left_pad(rows, pad_id, device)
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    if dedupe:
        owner, firsts = distinct(rows)
        if len(firsts) < len(rows):
            uniq = torch.tensor(firsts, device=device)
            logits, cache = forward(ids[uniq], mask[uniq], pos[uniq], None)
            if hasattr(cache, "batch_select_indices"):  # else: an opaque cache that cannot expand
                expand = torch.tensor(owner, device=device)
                cache.batch_select_indices(expand)
                return logits[expand], cache, mask, pos[:, -1]
    logits, cache = forward(ids, mask, pos, None)
    return logits, cache, mask, pos[:, -1]


class Stepper(Protocol):
    """The model side of the decode loop: ``prefill(prompts) -> logits[B, V]``, then
    ``step(next_ids[B], finished[B]) -> logits[B, V]`` once per generated token."""

    def prefill(self, prompts: Sequence[list[int]]) -> torch.Tensor: ...

    def step(self, next_ids: torch.Tensor, finished: torch.Tensor) -> torch.Tensor: ...


class PaddedStepper:
    """Any ``forward`` over left-padded rows with a growing attention mask; finished rows stay (masked), so
    the cache may be opaque."""

    def __init__(self, forward: Forward, pad_id: int, device: torch.device, dedupe: bool = True):
        self.forward, self.pad_id, self.device, self.dedupe = forward, pad_id, device, dedupe

    def prefill(self, prompts: Sequence[list[int]]) -> torch.Tensor:
        logits, self.cache, self.mask, self.last_pos = _prefill(self.forward, prompts, self.pad_id, self.device,
                                                                self.dedupe)  # fmt: skip
        return logits

    def step(self, next_ids: torch.Tensor, finished: torch.Tensor) -> torch.Tensor:
        ones = torch.ones((self.mask.shape[0], 1), dtype=self.mask.dtype, device=self.device)
        self.mask = torch.cat([self.mask, ones], dim=1)
        self.last_pos = self.last_pos + 1
        logits, self.cache = self.forward(next_ids[:, None], self.mask, self.last_pos[:, None], self.cache)
        return logits


def decode_batch(
    rows: Sequence[Row], forward: Forward | Stepper, processor: StepProcessor | None, tokenizer: Any,
    stop_table: StopTable, eos_ids: Sequence[int], pad_id: int, device: torch.device, dedupe_prefill: bool = True,
) -> list[Sample]:  # fmt: skip
    """One :class:`Sample` per row. ``forward``: a :class:`Stepper`, or a step function for a
    :class:`PaddedStepper`. Steps:
      1. prefill the prompts (position ids count real tokens only);
      2. each step: intervention on the float logits, optional entropy, token choice,
         EOS / stop-string / length bookkeeping, one forward on the chosen tokens;
      3. stop when every row is finished; cut token ids and text per row.
    """
    stepper = forward if hasattr(forward, "prefill") else PaddedStepper(forward, pad_id, device, dedupe_prefill)
    logits = stepper.prefill([r.prompt_ids for r in rows])
    sampler = _sampler(rows, device)
    B, S = len(rows), max(r.max_new_tokens for r in rows)
    max_new = torch.tensor([r.max_new_tokens for r in rows], dtype=torch.long, device=device)
    is_eos = _eos_table(eos_ids, logits.shape[-1], device)
    stop_cand = stop_table.for_rows(rows)
    generated = torch.full((B, S), pad_id, dtype=torch.long, device=device)
    finished = torch.zeros(B, dtype=torch.bool, device=device)
    length = torch.full((B,), S, dtype=torch.long, device=device)  # tokens kept per row
    triggers = torch.zeros(B, dtype=torch.long, device=device)
    want_entropy = any(r.return_entropy for r in rows)
    entropies = torch.zeros((B, S), dtype=torch.float32, device=device) if want_entropy else None
    stopped_by_string: dict[int, int] = {}  # row -> character index of the stop string in its text

    for step in range(S):
        logits = logits.float()
        if processor is not None:
            logits, trig = processor(logits, generated, step)
            if trig is not None:
                triggers += (trig & ~finished).long()
        if entropies is not None:
            entropies[:, step] = entropy(logits)
        nxt = torch.where(finished, pad_id, sampler(logits, step))
        generated[:, step] = nxt
        # EOS and length end a row on device; stop strings need the text of the few candidate rows.
        done = ~finished & (is_eos[nxt] | (step + 1 >= max_new))
        if stop_cand is not None:
            hits = _stop_string_hits(rows, ~finished & stop_cand[nxt], generated[:, : step + 1], tokenizer)
            stopped_by_string.update(hits)
            for r in hits:
                done[r] = True
        length = torch.where(done, step + 1, length)
        finished |= done
        if step + 1 == S or bool(finished.all()):
            break
        logits = stepper.step(nxt, finished)
    return _samples(rows, generated, length, triggers, entropies, stopped_by_string, tokenizer, eos_ids)


def _sampler(rows: Sequence[Row], device: torch.device) -> SeededSampler:
    return SeededSampler(torch.tensor([r.seed for r in rows], dtype=torch.long, device=device),
                         torch.tensor([r.sample_idx for r in rows], dtype=torch.long, device=device),
                         torch.tensor([r.temperature for r in rows], dtype=torch.float32, device=device))  # fmt: skip


def _eos_table(eos_ids: Sequence[int], vocab: int, device: torch.device) -> torch.Tensor:
    """``[vocab]`` bool: which token ids end a row (the EOS ids inside the vocabulary)."""
    is_eos = torch.zeros(vocab, dtype=torch.bool, device=device)
    is_eos[[e for e in eos_ids if 0 <= e < vocab]] = True
    return is_eos


def _stop_string_hits(rows: Sequence[Row], candidates: torch.Tensor, generated: torch.Tensor, tokenizer: Any):
    """``{row: character index of the earliest stop string}`` for the flagged rows whose text now holds one
    (only those are decoded: decoding every row would dominate the step)."""
    hits_by_row: dict[int, int] = {}
    for r in torch.nonzero(candidates).flatten().tolist():
        text = tokenizer.decode(generated[r].tolist(), skip_special_tokens=True)
        hits = [text.find(s) for s in rows[r].stop if s in text]
        if hits:
            hits_by_row[r] = min(hits)
    return hits_by_row


def _samples(
    rows: Sequence[Row], generated: torch.Tensor, length: torch.Tensor, triggers: torch.Tensor,
    entropies: torch.Tensor | None, stopped_by_string: dict[int, int], tokenizer: Any, eos_ids: Sequence[int],
) -> list[Sample]:  # fmt: skip
    """One :class:`Sample` per row: ids cut to its length, text cut at its stop string, its finish reason."""
    gen, lens, trig_list = generated.cpu().tolist(), length.cpu().tolist(), triggers.cpu().tolist()
    ent = entropies.cpu().tolist() if entropies is not None else None
    eos = set(eos_ids)
    samples = []
    for r, row in enumerate(rows):
        ids = gen[r][: lens[r]]
        text = tokenizer.decode(ids, skip_special_tokens=True)
        if r in stopped_by_string:
            text, reason = text[: stopped_by_string[r]], "stop"
        else:
            reason = "stop" if ids and ids[-1] in eos else "length"
        row_ent = ent[r][: lens[r]] if ent is not None and row.return_entropy else None
        samples.append(Sample(ids, text, reason, entropies=row_ent, triggers=int(trig_list[r])))
    return samples
