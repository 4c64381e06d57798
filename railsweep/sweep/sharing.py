"""A cell's independent decoding jobs shared with its family's idle engines.

Shortcut's localisation (:func:`railsweep.strategies.shortcut.localisation.causal_scores`) is one long one-off step
inside one cell: 2·(L−1)·n_blocks patched greedy passes, independent of each other. On a sweep's engine the cell's
engine is wrapped in a :class:`SharingEngine`, whose ``generate_shares(jobs)`` decodes a list of jobs (each a list
of requests) in order: before each job it decodes itself, it borrows every idle engine of its family from the pool
(:meth:`railsweep.sweep.pool.EnginePool.lend`: never one a cell waits for) and hands each the next job; a borrowed
engine gives itself back when its job is done. The results come back in job order and are the same wherever a job
ran (greedy decoding, the same engine configuration on every engine of a family; ``tests/test_engine_placement.py``);
a job whose borrowed engine failed is decoded again by the cell's own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from railsweep.sweep.actors import ENGINE_NAMESPACE


class SharingEngine:
    """``engine`` (the cell's own, counting its samples) plus ``generate_shares`` over the borrowed engines.

    ``pool``: the sweep's engine pool actor; ``me``: this engine's actor name; ``strategy``: the cell's (a borrowed
    engine decodes with the same backend); ``cell_id``: names the shares' leases; ``on_samples``: hears the samples
    the borrowed engines decoded (the cell's own engine counts its own)."""

    def __init__(self, engine: Any, pool: Any, me: str, strategy: str, cell_id: str, on_samples: Callable[[int], None]):
        self._engine = engine
        self._pool, self._me, self._strategy, self._cell = pool, me, strategy, cell_id
        self._on = on_samples
        self.shared = 0  # jobs decoded by borrowed engines

    def generate(self, requests: Sequence[Any]) -> Any:
        return self._engine.generate(requests)

    def generate_shares(self, jobs: Sequence[Sequence[Any]]) -> list[Any]:
        """Every job's completions, in job order (see the module docstring)."""
        import ray  # the sweep's optional dependency; this wrapper exists only on a sweep's engine

        results: list[Any] = [None] * len(jobs)
        lent: dict[Any, int] = {}  # object ref → job index
        i = 0
        while i < len(jobs):
            while i < len(jobs) - 1 and (name := self._borrow(i)) is not None:  # the last job is always ours
                engine = ray.get_actor(name, namespace=ENGINE_NAMESPACE)
                lent[engine.decode.remote(list(jobs[i]), self._strategy, self._pool, self._holder(i))] = i
                i += 1
            results[i] = self._engine.generate(jobs[i])
            i += 1
        for ref, k in lent.items():
            try:
                results[k] = ray.get(ref)
            except Exception:  # noqa: BLE001 - a borrowed engine died: decode its job here
                results[k] = self._engine.generate(jobs[k])
                continue
            self.shared += 1
            self._on(sum(len(c.samples) for c in results[k]))
        return results

    def _holder(self, job: int) -> str:
        return f"{self._cell}/share-{job}"

    def _borrow(self, job: int) -> str | None:
        import ray

        return ray.get(self._pool.lend.remote(self._me, self._holder(job)))

    def __getattr__(self, item: str) -> Any:  # model, tokenizer, adapters(), supports(), name, ...
        return getattr(self._engine, item)
