"""The shared conformance suite, run over every registered strategy (PEFT-style).

Every strategy: its default config builds, round-trips through make_config /
config_dict, is JSON-serialisable, and rejects unknown parameters; the same
seed gives the same outcomes; and where a strategy can be switched off, the
switched-off strategy reproduces Identity sample for sample.
"""

from __future__ import annotations

import json

import pytest
from baselines_world import make_ctx, toy_task

from railsweep.errors import ConfigError
from railsweep.strategies import build_strategy, known_strategies, make_config
from railsweep.strategies.base import config_dict

ALL = known_strategies()

# Parameters that switch a strategy off: it must then equal Identity exactly.
# (RailCap with an empty trajectory is covered by the RailCap tests.)
SWITCHED_OFF = {
    "ted": {"tau": -1, "dedup": False},
    "lne_blocking": {"t_task": 0},
    "shortcut": {"k": 0},
}


def test_registry_holds_the_six_paper_strategies():
    assert {"identity", "all_zero", "railcap", "ted", "lne_blocking", "shortcut"} <= set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_default_config_round_trips_through_config_dict(name):
    cfg = make_config(name)
    d = config_dict(cfg)
    assert json.loads(json.dumps(d)) == d
    assert make_config(name, d) == cfg
    assert build_strategy(name, d).config == cfg


@pytest.mark.parametrize("name", ALL)
def test_unknown_parameter_is_rejected_by_name(name):
    with pytest.raises(ConfigError, match="no_such_knob"):
        make_config(name, {"no_such_knob": 1})


def _fingerprint(outcomes):
    return [
        (
            o.index,
            [s.token_ids for s in o.samples],
            [s.text for s in o.samples],
            [g.correct for g in o.grades],
            o.c,
            o.m,
            o.r01,
        )
        for o in outcomes
    ]


def _run(world_engine, name, params=None, seed=0):
    task = toy_task(3)
    return build_strategy(name, params).run(make_ctx(world_engine, task, m=4, seed=seed), task.questions())


@pytest.mark.parametrize("name", ALL)
def test_same_seed_gives_identical_outcomes(world_engine, name):
    a, b = _run(world_engine, name), _run(world_engine, name)
    assert _fingerprint(a) == _fingerprint(b)
    assert [o.extras for o in a] == [o.extras for o in b]
    assert [o.index for o in a] == [0, 1, 2]


@pytest.mark.parametrize("name", [n for n in ALL if n != "all_zero"])
def test_different_seeds_give_different_samples(world_engine, name):
    a, b = _run(world_engine, name, seed=0), _run(world_engine, name, seed=1)
    assert [[s.token_ids for s in o.samples] for o in a] != [[s.token_ids for s in o.samples] for o in b]


@pytest.mark.parametrize("name", sorted(SWITCHED_OFF))
def test_switched_off_strategy_equals_identity(world_engine, name):
    assert name in ALL
    assert _fingerprint(_run(world_engine, name, SWITCHED_OFF[name])) == _fingerprint(_run(world_engine, "identity"))
