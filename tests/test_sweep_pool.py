"""The engine pool (railsweep.sweep.plan.pool): one engine per core or GPU dealt out over the families, and a cell
leased the first free engine of its family, so no cell queues behind another cell's long one-off step."""

from __future__ import annotations

import asyncio

import pytest

from railsweep.sweep.plan.pool import EnginePool, engine_layout


@pytest.mark.parametrize(
    "pending, units, want",
    [
        ({"llama": 6}, 2, {"llama": 2}),  # a one-family sweep on 2 cores: two engines for it
        ({"llama": 6, "neox": 6, "gemma": 6}, 2, {"llama": 1, "neox": 1, "gemma": 1}),  # at least one each
        ({"llama": 3, "neox": 7, "gemma": 7}, 4, {"llama": 1, "neox": 2, "gemma": 1}),  # spare core: most work
        ({"llama": 5, "neox": 5}, 5, {"llama": 3, "neox": 2}),  # equal work: spec order
        ({"llama": 0, "neox": 4}, 2, {"neox": 2}),  # a family with nothing left gets no engine
        ({}, 8, {}),
    ],
)
def test_cores_are_dealt_out_over_the_families_with_work_left(pending, units, want):
    got = engine_layout(pending, units=units)
    assert got == want
    assert sum(got.values()) == (max(units, len(want)) if want else 0)  # every core has an engine


def test_engine_replicas_fix_the_engines_per_family():
    assert engine_layout({"llama": 4, "neox": 1}, units=16, replicas=2) == {"llama": 2, "neox": 2}


def _pool() -> EnginePool:
    return EnginePool({"llama": ["l0", "l1"], "neox": ["n0"]})


def test_a_cell_gets_a_free_engine_of_its_family_lowest_first():
    async def go():
        pool = _pool()
        assert await pool.acquire("llama", "a") == "l0"
        assert await pool.acquire("llama", "b") == "l1"
        assert await pool.acquire("neox", "c") == "n0"
        await pool.release("a")
        assert await pool.acquire("llama", "d") == "l0"

    asyncio.run(go())


def test_a_long_cell_holds_one_engine_while_the_others_decode_on_the_other():
    """Shortcut's localisation holds l0; every other llama cell goes to l1 in turn, none waits on l0."""

    async def go():
        pool = _pool()
        assert await pool.acquire("llama", "shortcut") == "l0"
        served = []
        for cell in ("identity", "all_zero", "railcap"):
            served.append(await asyncio.wait_for(pool.acquire("llama", cell), 1))
            await pool.release(cell)
        assert served == ["l1", "l1", "l1"]
        assert (await pool.snapshot())["held"] == {"shortcut": "l0"}

    asyncio.run(go())


def test_cells_wait_first_come_first_served_when_every_engine_is_busy():
    async def go():
        pool = _pool()
        await pool.acquire("llama", "a")
        await pool.acquire("llama", "b")
        first = asyncio.ensure_future(pool.acquire("llama", "c"))
        second = asyncio.ensure_future(pool.acquire("llama", "d"))
        await asyncio.sleep(0)
        assert not first.done() and not second.done()
        assert (await pool.snapshot())["waiting"]["llama"] == ["c", "d"]
        await pool.release("b")
        assert await asyncio.wait_for(first, 1) == "l1" and not second.done()
        await pool.release("a")
        assert await asyncio.wait_for(second, 1) == "l0"
        snap = await pool.snapshot()
        assert snap["held"] == {"c": "l1", "d": "l0"} and snap["free"]["llama"] == [] and snap["leases"] == 4

    asyncio.run(go())


def test_a_retried_cell_gets_back_the_engine_its_dead_trial_held():
    """A trial whose worker died never released; its retry takes the same engine, which then goes back."""

    async def go():
        pool = _pool()
        assert await pool.acquire("neox", "x") == "n0"
        assert await asyncio.wait_for(pool.acquire("neox", "x"), 1) == "n0"  # the retry: no deadlock
        await pool.release("x")
        await pool.release("x")  # a second release of the same lease changes nothing
        assert (await pool.snapshot())["free"]["neox"] == ["n0"]

    asyncio.run(go())


def test_a_cell_waiting_twice_is_served_once_and_both_waits_end():
    async def go():
        pool = _pool()
        await pool.acquire("neox", "busy")
        dead = asyncio.ensure_future(pool.acquire("neox", "x"))
        retry = asyncio.ensure_future(pool.acquire("neox", "x"))
        await asyncio.sleep(0)
        await pool.release("busy")
        assert await asyncio.wait_for(dead, 1) == await asyncio.wait_for(retry, 1) == "n0"
        await pool.release("x")
        assert (await pool.snapshot())["free"]["neox"] == ["n0"]

    asyncio.run(go())


def test_a_family_without_engines_is_refused_by_name():
    with pytest.raises(KeyError, match="no engine for family 'gemma'"):
        asyncio.run(_pool().acquire("gemma", "a"))


def test_an_engine_borrows_its_familys_idle_engine_for_a_share_and_gives_it_back():
    async def go():
        pool = _pool()
        assert await pool.acquire("llama", "shortcut") == "l0"
        assert await pool.lend("l0", "share-1") == "l1"
        assert await pool.lend("l0", "share-2") is None  # nothing else free in llama
        assert await pool.lend("n0", "share-3") is None  # an engine never borrows itself
        await pool.release("share-1")
        assert (await pool.snapshot())["free"]["llama"] == ["l1"]

    asyncio.run(go())


def test_a_borrow_never_takes_an_engine_a_cell_waits_for():
    async def go():
        pool = _pool()
        await pool.acquire("llama", "shortcut")
        assert await pool.lend("l0", "share-1") == "l1"
        waiting = asyncio.ensure_future(pool.acquire("llama", "identity"))
        await asyncio.sleep(0)
        await pool.release("share-1")  # the share's engine goes to the waiting cell, not back to sharing
        assert await asyncio.wait_for(waiting, 1) == "l1"
        assert await pool.lend("l0", "share-2") is None
        await pool.release("identity")
        assert await pool.lend("l0", "share-3") == "l1"
        assert await pool.lend("zz", "share-4") is None  # an engine the pool does not know lends nothing

    asyncio.run(go())


def _moving_pool(cells: dict[str, int]) -> EnginePool:
    return EnginePool({"llama": ["l0"], "neox": ["n0"], "gemma": ["g0"]}, cells)


def test_the_engine_of_a_family_with_no_cell_left_moves_to_the_family_with_the_most_left():
    """neox's only cell finishes while llama has three cells (one running, two waiting) and gemma one: n0 goes to
    llama's longest-waiting cell, then is llama's."""

    async def go():
        pool = _moving_pool({"llama": 3, "neox": 1, "gemma": 1})
        assert await pool.acquire("llama", "l-a") == "l0"
        assert await pool.acquire("neox", "n-a") == "n0"
        assert await pool.acquire("gemma", "g-a") == "g0"
        waiting = [asyncio.ensure_future(pool.acquire("llama", c)) for c in ("l-b", "l-c")]
        await asyncio.sleep(0)
        await pool.release("n-a", True)
        assert await asyncio.wait_for(waiting[0], 1) == "n0" and not waiting[1].done()
        snap = await pool.snapshot()
        assert snap["moves"] == 1 and snap["cells_left"] == {"llama": 3, "neox": 0, "gemma": 1}
        await pool.release("l-b", True)  # n0 now serves llama's next waiting cell, as llama's own engine
        assert await asyncio.wait_for(waiting[1], 1) == "n0"

    asyncio.run(go())


def test_a_moved_engine_is_lent_to_the_running_cell_of_its_new_family():
    """gemma's last cell runs alone; once llama and neox are done, both their engines are gemma's to borrow."""

    async def go():
        pool = _moving_pool({"llama": 1, "neox": 1, "gemma": 1})
        for fam, cell in (("llama", "l-a"), ("neox", "n-a"), ("gemma", "g-a")):
            await pool.acquire(fam, cell)
        await pool.release("l-a", True)
        await pool.release("n-a", True)
        assert sorted([await pool.lend("g0", "g-a/share-0"), await pool.lend("g0", "g-a/share-1")]) == ["l0", "n0"]
        assert (await pool.snapshot())["moves"] == 3  # l0 went to neox's running cell first, then both to gemma

    asyncio.run(go())


def test_an_engine_stays_with_its_family_while_it_has_cells_left_or_without_cell_counts():
    async def go():
        pool = _moving_pool({"llama": 2, "neox": 2, "gemma": 1})
        for fam, cell in (("llama", "l-a"), ("neox", "n-a")):
            await pool.acquire(fam, cell)
        await pool.release("n-a", True)  # neox has a cell left
        assert (await pool.snapshot())["free"]["neox"] == ["n0"]
        fixed = EnginePool({"llama": ["l0"], "neox": ["n0"]})
        await fixed.acquire("neox", "n-a")
        await fixed.release("n-a", True)
        assert await fixed.lend("l0", "x") is None and (await fixed.snapshot())["moves"] == 0

    asyncio.run(go())


def test_a_failed_cell_does_not_count_as_finished_and_a_retried_finished_cell_still_gets_an_engine():
    async def go():
        pool = _moving_pool({"llama": 1, "neox": 1, "gemma": 1})
        await pool.acquire("neox", "n-a")
        await pool.release("n-a")  # the decode failed: neox keeps its engine for the retry
        assert (await pool.snapshot())["free"]["neox"] == ["n0"]
        assert await pool.acquire("neox", "n-a") == "n0"
        await pool.acquire("llama", "l-a")
        await pool.release("n-a", True)  # n0 moves to llama (one cell left, running) or gemma (one, idle engine)
        assert (await pool.snapshot())["free"]["neox"] == []
        retried = asyncio.ensure_future(pool.acquire("neox", "n-a"))  # the trial failed after decoding
        await asyncio.sleep(0)
        assert not retried.done()
        await pool.release("l-a", True)  # the next engine released goes to neox, which has none
        assert await asyncio.wait_for(retried, 1) in ("l0", "n0")
        assert (await pool.snapshot())["cells_left"]["neox"] == 1

    asyncio.run(go())
