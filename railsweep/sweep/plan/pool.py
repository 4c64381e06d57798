"""The engine pool: how many engine actors a sweep starts per family, and which of them decodes a cell.

Layout (:func:`engine_layout`): on CPU one engine actor per core, one torch thread each (two threads in one
decoding process ran 8-12x slower than one on a shared 2-core machine, 1.08x slower on a quiet one); on GPU one
per GPU; the units dealt out over the families (the most cells left first), at least one each;
``resources.engine_replicas`` fixes the count instead (every engine holds its own copy of the model).

Dispatch (:class:`EnginePool`, one async actor per sweep): a trial gets the first free engine of its cell's
family, or waits in a first-come queue, and gives it back once the cell is decoded. An engine holding a cell
may borrow its family's idle engines for a share of the cell's one-off work (:meth:`EnginePool.lend`), never
waiting and never taking an engine a cell waits for. An engine whose family has no cell left moves to the
family with the most cells left per engine (off where an engine cannot change its model: vLLM keeps its GPU
memory). A lease is keyed by cell id, so a retried trial gets the engine its cell already held. Which engine
decodes a cell never changes its samples (``tests/test_engine_placement.py``).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any


def engine_layout(pending: Mapping[str, int], *, units: int, replicas: int | None = None) -> dict[str, int]:
    """Engines per family: ``units`` (cores on CPU, GPUs on GPU) dealt out over the families of ``pending``
    (family → cells left, in spec order), at least one each; ``replicas`` (the spec's) fixes the count."""
    fams = [f for f, n in pending.items() if n > 0]
    if replicas is not None:
        return dict.fromkeys(fams, replicas)
    if not fams:
        return {}
    base, extra = divmod(max(units, len(fams)), len(fams))
    busiest = sorted(fams, key=lambda f: -pending[f])[:extra]  # stable: spec order among equals
    return {f: base + (f in busiest) for f in fams}


class EnginePool:
    """Leases of engine actors (by name) to cells, per family. ``engines``: family → its engines' names, the
    preferred first. Coroutines: as a Ray async actor every call runs on one event loop, in arrival order."""

    def __init__(self, engines: Mapping[str, Sequence[str]], cells: Mapping[str, int] | None = None):
        self._order = {name: i for names in engines.values() for i, name in enumerate(names)}
        self._family = {name: fam for fam, names in engines.items() for name in names}
        self._free = {fam: list(names) for fam, names in engines.items()}
        self._waiting: dict[str, OrderedDict[str, list[asyncio.Future]]] = {fam: OrderedDict() for fam in engines}
        self._held: dict[str, str] = {}  # cell id → engine name
        self._left = None if cells is None else {fam: int(cells.get(fam, 0)) for fam in engines}
        self._finished: set[str] = set()
        self.leases = 0
        self.moves = 0

    async def acquire(self, family: str, cell_id: str) -> str:
        """The name of a free engine of ``family`` for ``cell_id`` (waits for one); the cell's own if it holds one."""
        if cell_id in self._held:
            return self._held[cell_id]
        if family not in self._free:
            raise KeyError(f"no engine for family {family!r}; the pool has {sorted(self._free)}")
        if cell_id in self._finished and self._left is not None:  # a finished cell's trial retried
            self._finished.discard(cell_id)
            self._left[family] += 1
        free = self._free[family]
        if free:  # nobody waits while an engine is free: release hands engines to waiters first
            return self._lease(cell_id, free.pop(0))
        fut = asyncio.get_running_loop().create_future()
        self._waiting[family].setdefault(cell_id, []).append(fut)
        self._move_idle()
        return await fut

    async def lend(self, engine: str, holder: str) -> str | None:
        """A free engine of ``engine``'s family for ``holder`` (a share of a cell's work), or None when none is
        free or a cell of the family waits for one (cells come first). Given back with :meth:`release`."""
        family = self._family.get(engine)
        if family is None or self._waiting[family] or holder in self._held:
            return None
        free = [name for name in self._free[family] if name != engine]
        if not free:
            return None
        self._free[family].remove(free[0])
        return self._lease(holder, free[0])

    async def release(self, cell_id: str, finished: bool = False) -> None:
        """Give ``cell_id``'s engine back: to the longest-waiting cell of its family, else to the free list.
        ``finished``: the cell is decoded (a trial's last release; a share's holder never says so)."""
        if (name := self._held.pop(cell_id, None)) is not None:
            if finished and self._left is not None and cell_id not in self._finished:
                self._finished.add(cell_id)
                self._left[self._family[name]] = max(0, self._left[self._family[name]] - 1)
            self._hand_over(name)
        self._move_idle()

    def _hand_over(self, name: str) -> None:
        """``name`` to the longest-waiting cell of its family, of a family left with no engine, else freed."""
        family = self._family[name]
        if not self._waiting[family]:
            family = next((f for f, q in self._waiting.items() if q and self._engines(f) == 0), family)
            self._family[name] = family
        if queue := self._waiting[family]:
            waiter, futures = queue.popitem(last=False)
            self._lease(waiter, name)
            for fut in futures:
                if not fut.done():
                    fut.set_result(name)
            return
        free = self._free[family]
        free.append(name)
        free.sort(key=self._order.__getitem__)

    def _engines(self, family: str) -> int:
        return sum(f == family for f in self._family.values())

    def _move_idle(self) -> None:
        """Move each free engine of a family with no cell left to the family with the most cells left per engine."""
        if self._left is None:
            return
        for family, free in self._free.items():
            while free and self._left[family] == 0 and not self._waiting[family]:
                need = {f: n / max(self._engines(f), 1) for f, n in self._left.items() if n and f != family}
                if not need:
                    return
                target = max(need, key=lambda f: (bool(self._waiting[f]), need[f]))
                name = free.pop()
                self._family[name] = target
                self.moves += 1
                self._hand_over(name)

    async def snapshot(self) -> dict[str, Any]:
        """Held, free and waiting per family, and the leases handed out so far."""
        return {"held": dict(self._held), "free": {fam: list(names) for fam, names in self._free.items()},
                "waiting": {fam: list(q) for fam, q in self._waiting.items()}, "leases": self.leases,
                "cells_left": None if self._left is None else dict(self._left),
                "moves": self.moves}  # fmt: skip

    def _lease(self, cell_id: str, name: str) -> str:
        self._held[cell_id] = name
        self.leases += 1
        return name


def create_engine_pool(engines: Mapping[str, Sequence[str]], cells: Mapping[str, int] | None = None) -> Any:
    """The pool actor (from the driver, never a trial), holding no CPU. Restarted if it dies, every engine
    free again in its first family: at worst two cells then share an engine, which serves them in turn."""
    import ray  # optional heavy dependency: only sweeps import it

    actor = ray.remote(EnginePool).options(num_cpus=0, max_restarts=-1, max_task_retries=-1)
    return actor.remote({f: list(n) for f, n in engines.items()}, None if cells is None else dict(cells))
