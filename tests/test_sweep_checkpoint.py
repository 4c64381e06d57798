"""A cell killed half-way decodes only what it had not decoded when it runs again, and gives the same cell as a run
that was never killed (railsweep.sweep.run.checkpoint)."""

from __future__ import annotations

import dataclasses

import pytest

from railsweep.engines.base import Completion, Request, Sample, SamplingSpec
from railsweep.interventions import RailCapSpec
from railsweep.sweep.plan.cells import expand
from railsweep.sweep.plan.resources import engine_config
from railsweep.sweep.run.actors import ProgressBoard
from railsweep.sweep.run.checkpoint import CheckpointedEngine, call_key
from railsweep.sweep.run.engine_server import EngineServer
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sweep_spec import load_spec


class _Echo:
    """An engine whose completions name their prompt; counts its calls; dies on call number ``die_at``."""

    name = "echo"

    def __init__(self, die_at: int | None = None):
        self.calls, self.die_at = 0, die_at

    def generate(self, requests):
        self.calls += 1
        if self.calls == self.die_at:
            raise RuntimeError("killed")
        return [Completion([Sample([1, 2], r.prompt, "stop", [0.5, float("nan")], 3)]) for r in requests]

    def adapters(self):
        return ["clean"]


class _Remote:
    """An actor handle stand-in: ``handle.method.remote(...)`` calls the object's method."""

    def __init__(self, obj):
        self._obj = obj

    def __getattr__(self, name):
        return type("Method", (), {"remote": staticmethod(getattr(self._obj, name))})()


def _batches():
    spec = SamplingSpec(n=1, temperature=0.7, seed=4)
    return [[Request(f"q{i}", spec, "clean") for i in range(j, j + 2)] for j in (0, 2, 4)]


def test_a_killed_readout_resumes_from_its_last_finished_call_with_the_same_completions(tmp_path):
    batches = _batches()
    dying = CheckpointedEngine(_Echo(die_at=3), tmp_path / "cell", "id")
    with pytest.raises(RuntimeError):
        for b in batches:
            dying.generate(b)
    assert len(list((tmp_path / "cell").glob("*.json"))) == 2
    inner = _Echo()
    again = CheckpointedEngine(inner, tmp_path / "cell", "id")
    out = [again.generate(b) for b in batches]
    assert inner.calls == 1 and again.resumed == 4  # only the third call decoded
    assert [c.samples[0].text for b in out for c in b] == [f"q{i}" for i in range(6)]
    assert out[0][0].samples[0].entropies[0] == 0.5 and out[0][0].samples[0].triggers == 3
    again.forget()
    assert not (tmp_path / "cell").exists() and again.adapters() == ["clean"]


class _Sharing(_Echo):
    """A sweep engine's interface: ``generate_shares`` over jobs, each job heard as it is in hand."""

    def generate_shares(self, jobs, on_result=None):
        out = []
        for i, job in enumerate(jobs):
            out.append(self.generate(job))
            on_result(i, out[-1])
        return out


def test_jobs_shared_with_idle_engines_are_kept_one_by_one_and_only_the_missing_are_shared_again(tmp_path):
    batches = _batches()
    dying = CheckpointedEngine(_Sharing(die_at=3), tmp_path / "cell", "id")
    with pytest.raises(RuntimeError):
        dying.generate_shares(batches)
    inner = _Sharing()
    again = CheckpointedEngine(inner, tmp_path / "cell", "id")
    out = again.generate_shares(batches)
    assert inner.calls == 1 and again.resumed == 4
    assert [c.samples[0].text for b in out for c in b] == [f"q{i}" for i in range(6)]
    assert getattr(CheckpointedEngine(_Echo(), tmp_path, "id"), "generate_shares", None) is None  # none to offer


def test_any_change_to_a_request_or_to_the_decoding_identity_changes_the_calls_key():
    (b, *_) = _batches()
    key = call_key("id", b)
    seed = [dataclasses.replace(b[0], sampling=dataclasses.replace(b[0].sampling, seed=5)), b[1]]
    rail = [dataclasses.replace(b[0], intervention=RailCapSpec(trajectory=(1, 2, 3, 4, 5), n=1)), b[1]]
    assert len({key, call_key("id2", b), call_key("id", seed), call_key("id", rail), call_key("id", b[::-1])}) == 5
    assert call_key("id", b) == key


def test_an_engine_server_cell_killed_half_way_finishes_as_if_never_killed(smoke_world, tmp_path):
    spec = resolve_spec(dataclasses.replace(load_spec("smoke"), cache_dir=str(smoke_world)))
    cell = next(c.config for c in expand(spec) if c.config.strategy == "railcap")
    config = engine_config(spec, spec.families[0], "cpu")
    plain = EngineServer(config, threads=1, prompts_per_call=2).run_cell(cell.to_dict())
    server = EngineServer(config, threads=1, cache_dir=str(tmp_path), prompts_per_call=2)
    real, calls = server.engine.generate, []

    def dies_on_third_call(requests):
        calls.append(len(requests))
        if len(calls) == 3:
            raise RuntimeError("killed")
        return real(requests)

    server.engine.generate = dies_on_third_call
    with pytest.raises(RuntimeError):
        server.run_cell(cell.to_dict())
    server.engine.generate = real
    board = ProgressBoard(total=1)
    out = server.run_cell(cell.to_dict(), board=_Remote(board))
    assert out["n_resumed"] > 0 and out["n_samples"] == plain["n_samples"]
    assert (board.resumed, board.samples) == (out["n_resumed"], out["n_samples"])  # read back: done, not in the rate
    assert out["questions"].equals(plain["questions"]) and out["files"] == plain["files"]
    assert not (tmp_path / "readouts" / cell.cell_id).exists()
