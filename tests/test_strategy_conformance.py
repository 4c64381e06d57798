"""The shared conformance suite, run over every registered strategy (PEFT-style).

Every strategy: its default config builds, round-trips through make_config /
config_dict, is JSON-serialisable, and rejects unknown parameters; the same
seed gives the same outcomes; and every strategy declares whether a setting
switches it off (its config's ``switched_off``): if one does, the switched-off
strategy reproduces Identity sample for sample on the transformers engine, if
none does, it says why. Its registration (:mod:`railsweep.strategy_registry`)
holds: each backend it claims applies every intervention it sends, and each
backend it leaves out lacks one (the transformers engine asked through
``supports``, vLLM's table ``ADAPTERS`` read directly: vLLM is not needed); the
tables it is in and the row they show are the paper's (method.md §6).
"""

from __future__ import annotations

import json

import pytest
from baselines_world import make_ctx, toy_task

from railsweep.engines.vllm_adapters import ADAPTERS
from railsweep.errors import ConfigError
from railsweep.strategies import build_strategy, known_strategies, make_config
from railsweep.strategies.base import NoOffSwitch, config_dict
from railsweep.strategy_registry import BACKENDS, STRATEGIES, in_table, registration, strategy_label

ALL = known_strategies()


def _switched_off(name):
    return STRATEGIES.classes(name)[1].switched_off


HAS_OFF = [n for n in ALL if isinstance(_switched_off(n), dict)]


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


@pytest.mark.parametrize("name", ALL)
def test_every_strategy_declares_its_switched_off_setting_or_why_it_has_none(name):
    off = _switched_off(name)
    assert isinstance(off, dict | NoOffSwitch)
    if isinstance(off, dict):
        make_config(name, off)  # a valid setting of this strategy
    else:
        assert off.reason.strip()


def test_only_all_zero_and_railcap_have_no_switched_off_setting():
    assert {n for n in ALL if isinstance(_switched_off(n), NoOffSwitch)} == {"all_zero", "railcap"}
    with pytest.raises(ConfigError, match="n=0"):  # RailCap's would-be off switch is not a setting
        make_config("railcap", {"n": 0})


@pytest.mark.parametrize("name", HAS_OFF)
def test_switched_off_strategy_equals_identity(world_engine, name):
    off = _fingerprint(_run(world_engine, name, _switched_off(name)))
    assert off == _fingerprint(_run(world_engine, "identity"))


def _applies(world_engine, backend, intervention):
    return world_engine.supports(intervention) if backend == "transformers" else intervention in ADAPTERS


@pytest.mark.parametrize("name", ALL)
def test_registered_backends_are_exactly_those_that_apply_every_intervention_the_strategy_sends(
    world_engine, name
):
    reg = registration(name)
    for backend in BACKENDS:
        applies = all(_applies(world_engine, backend, kind) for kind in reg.interventions)
        assert applies == (backend in reg.backends), (name, backend)
    assert "transformers" in reg.backends or not reg.fallback  # a fallback runs on transformers


def test_the_paper_strategies_are_in_the_papers_tables():
    """Pins the paper's strategies only: a new strategy's membership is its own registration's business."""
    paper = {"identity", "all_zero", "ted", "lne_blocking", "shortcut", "railcap", "temperature"}
    members = {t: {n for n in paper if t in registration(n).tables} for t in ("1", "2", "3", "4")}
    main = {"identity", "ted", "lne_blocking", "shortcut", "railcap"}
    assert members == {
        "1": main,
        "2": main | {"all_zero"},
        "3": main | {"all_zero"},
        "4": {"railcap", "all_zero"},
    }


@pytest.mark.parametrize("name", ALL)
def test_a_table_strategy_shows_its_default_point_in_tables_1_to_3(name):
    for table in sorted(registration(name).tables & {"1", "2", "3"}):
        assert in_table(name, {}, table)


def test_tables_1_to_3_show_railcap_at_its_defaults_only_and_table_4_every_railcap_point():
    variants = [
        {"n": 2},
        {"mode": "ban"},
        {"successor": "all"},
        {"trajectory": "with_stop"},
        {"spare_numbers": True},
    ]
    assert in_table("railcap", {"n": 4, "mode": "cap"}, "1")
    for p in variants:
        assert not any(in_table("railcap", p, t) for t in ("1", "2", "3")), p
        assert in_table("railcap", p, "4")


@pytest.mark.parametrize("name", ALL)
def test_labels_are_the_display_name_unless_the_registration_shows_parameters(name):
    reg = registration(name)
    label = strategy_label(name, {})
    if reg.label_of is None:
        assert label == reg.display
    else:
        assert label.startswith(reg.display + " ")


def test_a_strategy_config_without_a_switched_off_declaration_cannot_register():
    from dataclasses import dataclass

    from railsweep.strategies.base import register

    @dataclass(frozen=True)
    class Undeclared:
        knob: int = 1

    with pytest.raises(TypeError, match="Undeclared.switched_off"):
        register("undeclared", Undeclared, display="Undeclared")
    assert "undeclared" not in known_strategies()


def test_each_role_beside_a_row_is_declared_by_its_strategies_registration():
    from railsweep.strategy_registry import detection_readout, with_role

    assert [r.name for r in with_role("reference")] == ["all_zero"]
    assert [r.name for r in with_role("scatter")] == ["identity", "railcap"]
    assert [r.name for r in with_role("plain_samples")] == ["identity", "ted"]
    assert detection_readout() == "ted" and isinstance(registration("ted").switched_off, dict)
    with pytest.raises(ValueError, match="unknown strategy role 'best'"):
        with_role("best")


def test_a_registration_with_an_unknown_role_cannot_register():
    from dataclasses import dataclass

    from railsweep.strategies.base import register

    @dataclass(frozen=True)
    class Roled:
        switched_off = {}

    with pytest.raises(TypeError, match="roles \\['favourite'\\] are not among"):
        register("roled", Roled, display="Roled", roles=("favourite",))
    assert "roled" not in known_strategies()


class _Counting:
    """The engine, counting every response it decodes (what ``railsweep sweep --dry-run`` prices)."""

    def __init__(self, engine):
        self._engine, self.decoded = engine, 0

    def generate(self, requests):
        out = self._engine.generate(requests)
        self.decoded += sum(len(c.samples) for c in out)
        return out

    def __getattr__(self, item):
        return getattr(self._engine, item)


DECODE_CASES = [(n, None) for n in ALL] + [
    ("lne_blocking", {"readout": "greedy"}),
    ("shortcut", {"readout": "greedy", "loc_blocks": 3}),
    ("shortcut", {"control": "random"}),
    ("shortcut", {"k": 0}),
    ("temperature", {"tau": 0.0}),
]


@pytest.mark.parametrize(("name", "params"), DECODE_CASES)
def test_declared_decodes_count_every_response_the_strategy_decodes(world_engine, name, params):
    from railsweep.interventions.neuron_patch import mlp_widths
    from railsweep.strategies.shortcut import localisation

    localisation._MEMO.clear()  # a localisation memoised by an earlier test would decode nothing
    task = toy_task(3)
    engine = _Counting(world_engine)
    ctx = make_ctx(engine, task, m=4)
    strategy = build_strategy(name, params)
    strategy.run(ctx, task.questions())
    want = len(task.questions()) * strategy.decodes(ctx.settings)
    one_off = getattr(strategy, "one_off", None)
    leaked = {q.index for q in task.questions() if q.leaked}
    planned = one_off([0, 1, 2], leaked, mlp_widths(world_engine.model)) if one_off else None
    if planned is not None:
        want += sum(len(qs) * runs for qs, runs, _ in planned[1])
    assert engine.decoded == want
    localises = (
        name == "shortcut" and (params or {}).get("control") != "random" and (params or {}).get("k") != 0
    )
    assert (planned is not None) == localises
