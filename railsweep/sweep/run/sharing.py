"""A cell's independent decoding jobs shared with its family's idle engines.

Shortcut's localisation (:func:`railsweep.strategies.shortcut.localisation.causal_scores`) is one long one-off
step inside one cell: 2·(L−1)·n_blocks independent patched greedy passes. In
:meth:`SharingEngine.generate_shares` the cell's own engine takes such jobs from a shared queue while a lender
thread borrows every idle engine of its family from the pool and hands it the next job. Results come back in
job order, the same wherever a job ran (greedy decoding); a job whose borrowed engine failed is decoded again
by the cell's own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from railsweep.sweep.run.actors import ENGINE_NAMESPACE

POLL_S = 0.5  # how often the lender asks the pool again while no engine of the family is idle


class SharingEngine:
    """``engine`` (the cell's own, counting its samples) plus ``generate_shares`` over the borrowed engines,
    which decode with the cell's ``strategy``'s backend on its ``family``'s model; ``me``: this engine's actor
    name; ``on_samples``: hears the samples the borrowed engines decoded."""

    def __init__(self, engine: Any, pool: Any, me: str, strategy: str, cell_id: str,
                 on_samples: Callable[[int], None], family: str | None = None):  # fmt: skip
        self._engine = engine
        self._pool, self._me, self._strategy, self._cell, self._family = pool, me, strategy, cell_id, family
        self._on = on_samples
        self.shared = 0  # jobs decoded by borrowed engines

    def generate(self, requests: Sequence[Any]) -> Any:
        return self._engine.generate(requests)

    def generate_shares(self, jobs: Sequence[Sequence[Any]],
                        on_result: Callable[[int, Any], None] | None = None) -> list[Any]:  # fmt: skip
        """Every job's completions, in job order; ``on_result(i, completions)`` hears each job as it is in hand."""
        import ray  # the sweep's optional dependency; this wrapper exists only on a sweep's engine

        keep = on_result or (lambda i, comps: None)
        results: list[Any] = [None] * len(jobs)
        queue, lent, done = _Queue(len(jobs)), {}, threading.Event()  # lent: object ref → job index
        lender = threading.Thread(target=self._lend, args=(jobs, queue, lent, done), daemon=True)
        lender.start()
        try:
            while (i := queue.take()) is not None:
                results[i] = self._engine.generate(jobs[i])
                keep(i, results[i])
        finally:
            done.set()
            lender.join()
        for ref, k in lent.items():
            try:
                results[k] = ray.get(ref)
            except Exception:  # noqa: BLE001 - a borrowed engine died: decode its job here
                results[k] = self._engine.generate(jobs[k])
                keep(k, results[k])
                continue
            self.shared += 1
            self._on(sum(len(c.samples) for c in results[k]))
            keep(k, results[k])
        for k in [k for k, r in enumerate(results) if r is None]:  # taken by a lender that failed before lending it
            results[k] = self._engine.generate(jobs[k])
            keep(k, results[k])
        return results

    def _lend(self, jobs: Sequence[Sequence[Any]], queue: _Queue, lent: dict, done: threading.Event) -> None:
        """The lender thread: while jobs are left, hand the next one to each engine the pool lends, else wait
        for a lent job to finish and ask again. A failing pool ends the lending."""
        import ray

        holders: dict[Any, str] = {}  # the lent jobs not seen finished yet: object ref → lease holder
        try:
            while not done.is_set() and queue.left():
                holder = f"{self._cell}/share-{len(lent)}"
                if (name := ray.get(self._pool.lend.remote(self._me, holder))) is None:
                    self._await_one(holders, done)
                    continue
                if (i := queue.take()) is None:
                    ray.get(self._pool.release.remote(holder))
                    return
                engine = ray.get_actor(name, namespace=ENGINE_NAMESPACE)
                ref = engine.decode.remote(list(jobs[i]), self._strategy, self._pool, holder, self._family)
                lent[ref], holders[ref] = i, holder
        except Exception:  # noqa: BLE001 - the pool is gone (sweep shutting down): nothing more to lend
            return

    def _await_one(self, holders: dict[Any, str], done: threading.Event) -> None:
        """Wait up to :data:`POLL_S` for one lent job to finish and give its engine back (the engine does too:
        the second release finds the lease gone)."""
        import ray

        if not holders:
            done.wait(POLL_S)
            return
        finished, _ = ray.wait(list(holders), num_returns=1, timeout=POLL_S)
        for ref in finished:
            ray.get(self._pool.release.remote(holders.pop(ref)))

    def __getattr__(self, item: str) -> Any:  # model, tokenizer, adapters(), supports(), name, ...
        return getattr(self._engine, item)


class _Queue:
    """The next job index, taken under a lock by the own engine and the lender thread."""

    def __init__(self, n: int):
        self._next, self._n, self._lock = 0, n, threading.Lock()

    def take(self) -> int | None:
        with self._lock:
            if self._next >= self._n:
                return None
            self._next += 1
            return self._next - 1

    def left(self) -> bool:
        with self._lock:
            return self._next < self._n
