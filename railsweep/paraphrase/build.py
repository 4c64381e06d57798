"""Build a PQ file from a GSM8K-style test set: ask, check, retry, keep or reject, one question at a time.

Steps of :func:`paraphrase_all`:
1. each question is sent with the paper's prompt, up to ``1 + retries`` times, in ``workers`` threads;
2. each reply is checked (:func:`~railsweep.paraphrase.checks.check_paraphrase`): the first that passes is
   kept, each refusal recorded with its reason; a failed request is a ``request_failed`` refusal, and the
   next attempt waits ``backoff * 2**k`` seconds after the k-th such failure (at most :data:`MAX_WAIT`);
3. a question with no passing reply within its budget is rejected and never written;
4. a run in which every request failed stops with a ServiceError: the endpoint is down, not the questions hard.

:func:`pq_rows` and :func:`report` turn the outcomes into the PQ JSONL rows (gold carried over) and the report.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError, ServiceError
from railsweep.paraphrase.checks import Verdict, check_paraphrase
from railsweep.paraphrase.client import Chat, RequestFailed
from railsweep.paraphrase.prompt import messages, parse_reply
from railsweep.tasks.data.gsm8k_rows import read_jsonl

_REPLY_SHOWN = 300  # characters of a refused reply kept in the report
REQUEST_FAILED = "request_failed"  # the refusal reason of an attempt whose request failed
MAX_WAIT = 30.0  # seconds: the longest wait before an attempt that follows a failed request


@dataclass(frozen=True)
class Item:
    """One test question: index, text, gold answer (GSM8K: after ``####``) and the task's answer type (how the
    checks look for the gold and what else they keep)."""

    idx: int
    question: str
    gold: str
    answer_type: str = "numeric"


@dataclass(frozen=True)
class Refusal:
    attempt: int
    reason: str
    detail: str
    reply: str


@dataclass(frozen=True)
class Outcome:
    """What became of one item: the kept paraphrase (None when rejected) and every refused attempt."""

    item: Item
    paraphrase: str | None
    rouge: float | None
    refusals: tuple[Refusal, ...] = ()

    @property
    def kept(self) -> bool:
        return self.paraphrase is not None


@dataclass(frozen=True)
class Budget:
    """Per-item retry budget, the checks' threshold and the first wait after a failed request (seconds)."""

    retries: int = 3
    max_rouge: float = 0.7
    seed: int | None = 0
    backoff: float = 0.25

    def __post_init__(self) -> None:
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ConfigError(f"retries must be an integer >= 0, got {self.retries!r}")
        if not 0 < self.max_rouge <= 1:
            raise ConfigError(f"max ROUGE-L must be in (0, 1], got {self.max_rouge!r}")
        if not 0 <= self.backoff <= MAX_WAIT:
            raise ConfigError(f"backoff must be in [0, {MAX_WAIT:g}] seconds, got {self.backoff!r}")


def read_items(path: str | Path, limit: int | None = None) -> list[Item]:
    """The questions of a GSM8K-style JSONL (``question``, ``answer`` ending ``#### N``), first ``limit`` only."""
    rows = read_jsonl(path)[:limit]
    return [Item(i, r["question"], r["answer"].split("####")[-1].strip()) for i, r in enumerate(rows)]


def paraphrase_one(client: Chat, item: Item, budget: Budget) -> Outcome:
    """Ask up to ``1 + budget.retries`` times; the first reply that passes every check is kept."""
    refusals: list[Refusal] = []
    failed = 0
    for attempt in range(1 + budget.retries):
        if failed:
            time.sleep(min(budget.backoff * 2 ** (failed - 1), MAX_WAIT))
        seed = None if budget.seed is None else budget.seed + attempt
        try:
            reply = client.complete(messages(item.question), seed=seed)
        except RequestFailed as e:
            failed += 1
            refusals.append(Refusal(attempt, REQUEST_FAILED, str(e), ""))
            continue
        text, why = parse_reply(reply)
        if text is None:
            verdict = Verdict("format", why)
        else:
            verdict = check_paraphrase(item.question, text, item.gold, budget.max_rouge, item.answer_type)
        if verdict.kept:
            return Outcome(item, text, verdict.rouge, tuple(refusals))
        refusals.append(Refusal(attempt, verdict.reason or "", verdict.detail, reply[:_REPLY_SHOWN]))
    return Outcome(item, None, None, tuple(refusals))


def paraphrase_all(client: Chat, items: Sequence[Item], budget: Budget, workers: int = 1) -> list[Outcome]:
    """Every item's outcome, in input order; a ServiceError other than a failed request (a bad key, a malformed
    answer) stops the run, as does a run whose every request failed."""
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futures = [pool.submit(paraphrase_one, client, item, budget) for item in items]
        outcomes = [f.result() for f in futures]
    finally:  # on an error, the questions not yet sent are dropped, not asked
        pool.shutdown(wait=True, cancel_futures=True)
    refusals = [r for o in outcomes for r in o.refusals]
    if refusals and not any(o.kept for o in outcomes) and all(r.reason == REQUEST_FAILED for r in refusals):
        raise ServiceError(f"every request failed ({len(refusals)} of them); the last: {refusals[-1].detail}")
    return outcomes


def pq_rows(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """The kept items as PQ rows ``{"idx", "question", "answer", "empty": false}``; rejected items are absent."""
    return [{"idx": o.item.idx, "question": o.paraphrase, "answer": o.item.gold, "empty": False}
            for o in outcomes if o.kept]  # fmt: skip


def _refusals(o: Outcome) -> list[dict[str, Any]]:
    return [dataclasses.asdict(r) for r in o.refusals]


def report(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Counts of kept / retried (kept after a refusal) / rejected items, refusal reasons, and per item why."""
    kept = [o for o in outcomes if o.kept]
    rouge = [o.rouge for o in kept if o.rouge is not None]
    return {"items": len(outcomes), "kept": len(kept), "retried": sum(1 for o in kept if o.refusals),
            "rejected": len(outcomes) - len(kept), "requests": sum(len(o.refusals) + o.kept for o in outcomes),
            "refusal_reasons": dict(Counter(r.reason for o in outcomes for r in o.refusals).most_common()),
            "kept_rouge_l": {"mean": sum(rouge) / len(rouge), "max": max(rouge)} if rouge else None,
            "rejected_items": [{"idx": o.item.idx, "refusals": _refusals(o)} for o in outcomes if not o.kept],
            "retried_items": [{"idx": o.item.idx, "refusals": _refusals(o)} for o in kept if o.refusals]}  # fmt: skip
