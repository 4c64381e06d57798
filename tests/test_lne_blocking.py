"""LNE-blocking: Eq. 1 and Eq. 10 against hand values, and both readouts on a real tiny model."""

from __future__ import annotations

import math

import pytest
from baselines_world import make_ctx, toy_task

from railsweep.engines.base import Request, SamplingSpec
from railsweep.errors import ConfigError
from railsweep.interventions import BanTopSpec
from railsweep.strategies import build_strategy, make_config
from railsweep.strategies.lne_blocking import blocking_count, lne


@pytest.mark.parametrize(
    "lne_value, n",
    [(0.1, 6), (0.6, 4), (2.0, 0), (3.5, 0), (0.0, 7), (-0.2, 7), (1.0, 3)],
)
def test_blocking_count_follows_eq10_with_floor_and_clipping(lne_value, n):
    assert blocking_count(lne_value, beta=2.0, t_task=7) == n


def test_blocking_count_is_exact_on_integer_boundaries():
    for k in range(8):
        value = 2.0 * (1 - k / 7)  # T_task * (1 - LNE/2) == k up to float error
        assert blocking_count(value, 2.0, 7, "floor") == k
        assert blocking_count(value, 2.0, 7, "ceil") == k


def test_rounding_modes_differ_only_off_integers():
    x = 2.0 * (1 - 3.5 / 7)  # T_task * LNE̅ = 3.5
    assert [blocking_count(x, 2.0, 7, r) for r in ("floor", "round", "ceil")] == [3, 4, 4]
    assert blocking_count(0.1, 2.0, 4) == 3  # code tasks: heavy contamination -> "Fixed Blocking 3"


def test_lne_is_the_mean_entropy_and_can_leave_out_the_stop_step():
    h = [0.5, 1.5, 4.0]
    assert lne(h, "stop") == pytest.approx(2.0)
    assert lne(h, "stop", include_stop_step=False) == pytest.approx(1.0)
    assert lne(h, "length", include_stop_step=False) == pytest.approx(2.0)  # no stop step to drop
    assert lne([0.7], "stop", include_stop_step=False) == pytest.approx(0.7)
    with pytest.raises(ConfigError):
        lne([], "stop")


@pytest.mark.parametrize(
    "params, match",
    [
        ({"beta": 0}, "beta=0"),
        ({"t_task": -1}, "t_task=-1"),
        ({"rounding": "up"}, "'up'"),
        ({"readout": "x"}, "'x'"),
    ],
)
def test_bad_parameters_are_rejected_with_their_values(params, match):
    with pytest.raises(ConfigError, match=match):
        make_config("lne_blocking", params)


def test_blocked_count_per_question_comes_from_the_greedy_entropies(world_engine):
    task = toy_task(4)
    ctx = make_ctx(world_engine, task, m=4, max_new_tokens=12)
    outs = build_strategy("lne_blocking").run(ctx, task.questions())
    for o in outs:
        h = o.greedy.entropies
        assert len(h) == len(o.greedy.token_ids)
        assert o.extras["lne"] == pytest.approx(math.fsum(h) / len(h))
        assert o.extras["n_blocked"] == blocking_count(o.extras["lne"])
    # the peaked world sits mid-range: some positions are blocked, not all 7
    assert any(0 < o.extras["n_blocked"] < 7 for o in outs)


def test_official_greedy_readout_is_the_blocked_greedy_replicated(world_engine):
    task = toy_task(4)
    ctx = make_ctx(world_engine, task, m=5, max_new_tokens=12)
    outs = build_strategy("lne_blocking", {"readout": "greedy"}).run(ctx, task.questions())
    for o in outs:
        assert o.m == 5 and o.c in (0, 5)
        assert len({tuple(s.token_ids) for s in o.samples}) == 1
        n = o.extras["n_blocked"]
        blocked = o.samples[0].token_ids
        # the first generated token is never the unblocked greedy's when n >= 1 (its top-1 is banned)
        assert (blocked[0] != o.greedy.token_ids[0]) == (n >= 1)
        assert o.samples[0].triggers == min(n, len(blocked))


def test_ban_is_applied_in_every_sample_of_the_sampling_readout(world_engine):
    task = toy_task(3)
    ctx = make_ctx(world_engine, task, m=6, max_new_tokens=8)
    outs = build_strategy("lne_blocking", {"fixed_n": 2}).run(ctx, task.questions())
    for q, o in zip(task.questions(), outs):
        assert o.extras["n_blocked"] == 2
        first_top = o.greedy.token_ids[0]
        assert all(s.token_ids[0] != first_top for s in o.samples)  # the greedy's first token is banned
        assert all(s.triggers == 2 for s in o.samples)
        # the same samples as the engine gives for the bare BanTopSpec request
        req = Request(
            task.prompt(q),
            SamplingSpec(n=6, temperature=0.7, max_new_tokens=8, stop=task.stop, seed=_seed(ctx, q)),
            adapter="co",
            intervention=BanTopSpec(2),
        )
        assert [s.token_ids for s in world_engine.generate([req])[0].samples] == [s.token_ids for s in o.samples]


def test_detector_gating_blocks_nothing_above_xi(world_engine):
    task = toy_task(3)
    ctx = make_ctx(world_engine, task, m=2, max_new_tokens=8)
    outs = build_strategy("lne_blocking", {"xi": -1.0}).run(ctx, task.questions())
    assert [o.extras["n_blocked"] for o in outs] == [0, 0, 0]


def _seed(ctx, q):
    from railsweep.strategies.base import question_seed

    return question_seed(ctx.settings.seed, q.index, "sample")
