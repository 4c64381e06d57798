"""How a cell's jobs are dealt between its own engine and the engines the pool lends (:mod:`railsweep.sweep.run.sharing`),
on in-process stand-ins for the Ray calls: a lent engine gets the next job the moment it is free, the results come
back in job order whichever engine decoded them, and a failed share is decoded by the cell's own engine."""

from __future__ import annotations

import sys
import threading
import time
import types
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait

import pytest

from railsweep.strategies import base
from railsweep.sweep.run.sharing import SharingEngine


class _Remote:
    def __init__(self, fn):
        self.remote = fn


class _Pool:
    """The pool's ``lend`` and ``release`` with one lendable engine, ``helper``."""

    def __init__(self):
        self.lock, self.holder, self.leases = threading.Lock(), None, 0
        self.lend, self.release = _Remote(self._lend), _Remote(self._release)

    def _lend(self, me, holder):
        with self.lock:
            if self.holder is not None:
                return None
            self.holder, self.leases = holder, self.leases + 1
            return "helper"

    def _release(self, holder):
        with self.lock:
            if self.holder == holder:
                self.holder = None


class _Engine:
    """Decodes a job (a list of requests) in ``seconds``: a completion per request, carrying the request."""

    def __init__(self, name, seconds, fail=False):
        self.name, self.seconds, self.fail, self.jobs = name, seconds, fail, []
        self.executor = ThreadPoolExecutor(1)
        self.decode = _Remote(
            lambda requests, strategy, pool, holder, family: self.executor.submit(self._decode, requests, pool, holder)
        )

    def generate(self, requests):
        time.sleep(self.seconds)
        self.jobs.append(requests[0])
        return [types.SimpleNamespace(samples=[r]) for r in requests]

    def _decode(self, requests, pool, holder):
        """As :meth:`railsweep.sweep.run.engine_server.EngineServer.decode`: give itself back after a share."""
        try:
            if self.fail:
                raise RuntimeError("engine died")
            return self.generate(requests)
        finally:
            pool.release.remote(holder)


@pytest.fixture
def fake_ray(monkeypatch):
    helper = _Engine("helper", 0.02)
    ray = types.SimpleNamespace(
        get=lambda x: x.result() if isinstance(x, Future) else x,
        wait=lambda refs, num_returns, timeout: tuple(map(list, wait(refs, timeout, FIRST_COMPLETED))),
        get_actor=lambda name, namespace: helper,
    )
    monkeypatch.setitem(sys.modules, "ray", ray)
    return helper


def _sharing(own, pool, heard):
    return SharingEngine(own, pool, "own", "shortcut", "cell", heard.append)


def test_a_lent_engine_gets_the_next_job_as_soon_as_it_is_free(fake_ray):
    own, pool, heard = _Engine("own", 0.15), _Pool(), []
    jobs = [[f"job{k}"] for k in range(12)]
    sharing, kept = _sharing(own, pool, heard), {}
    results = sharing.generate_shares(jobs, on_result=kept.__setitem__)
    assert [c[0].samples for c in results] == [[f"job{k}"] for k in range(12)]
    assert kept == dict(enumerate(results))  # every job heard once, wherever it was decoded (the checkpoint's hook)
    # the helper, 7x faster, does most jobs; dealt one per own job it could do at most half
    assert len(fake_ray.jobs) > 8 and sharing.shared == len(fake_ray.jobs) and sum(heard) == len(fake_ray.jobs)
    assert sorted(own.jobs + fake_ray.jobs) == sorted(j[0] for j in jobs)
    assert pool.holder is None  # every lease given back


def test_a_job_whose_lent_engine_failed_is_decoded_by_the_cells_own_engine(fake_ray):
    fake_ray.fail = True
    own, pool, heard = _Engine("own", 0.05), _Pool(), []
    jobs = [[f"job{k}"] for k in range(4)]
    sharing, kept = _sharing(own, pool, heard), {}
    results = sharing.generate_shares(jobs, on_result=kept.__setitem__)
    assert [c[0].samples for c in results] == [[f"job{k}"] for k in range(4)] and kept == dict(enumerate(results))
    assert sorted(own.jobs) == sorted(j[0] for j in jobs) and sharing.shared == 0 and heard == []


def test_without_an_idle_engine_the_cells_own_engine_decodes_every_job(fake_ray):
    own, pool, heard = _Engine("own", 0.01), _Pool(), []
    pool.holder = "another cell"
    results = _sharing(own, pool, heard).generate_shares([["a"], ["b"], ["c"]])
    assert [c[0].samples for c in results] == [["a"], ["b"], ["c"]] and own.jobs == ["a", "b", "c"]
    assert pool.leases == 0 and pool.holder == "another cell"


@pytest.mark.parametrize(
    "engine, n, questions",
    [
        (types.SimpleNamespace(max_batch_size=320), 20, 64),  # an engine that does not share: the readout's calls
        (types.SimpleNamespace(max_batch_size=320, generate_shares=print), 20, 16),  # one 320-row batch per job
        (types.SimpleNamespace(max_batch_size=320, generate_shares=print), 1, 64),  # greedy: the readout's calls
        (types.SimpleNamespace(max_batch_size=8, generate_shares=print), 20, 1),  # at least one question
        (types.SimpleNamespace(generate_shares=print), 20, 64),  # no row limit known (vLLM): the readout's calls
    ],
)
def test_a_shared_readout_is_cut_into_the_engines_own_batches(engine, n, questions):
    ctx = types.SimpleNamespace(engine=engine, settings=types.SimpleNamespace(batch_size=64))
    assert base._job_size(ctx, n) == questions


def test_a_job_taken_by_a_lender_that_then_failed_is_decoded_by_the_cells_own_engine(fake_ray, monkeypatch):
    own, pool, heard = _Engine("own", 0.05), _Pool(), []
    monkeypatch.setattr(sys.modules["ray"], "get_actor", lambda name, namespace: 1 / 0)  # after the job is taken
    results = _sharing(own, pool, heard).generate_shares([["a"], ["b"], ["c"]])
    assert [c[0].samples for c in results] == [["a"], ["b"], ["c"]] and sorted(own.jobs) == ["a", "b", "c"]
