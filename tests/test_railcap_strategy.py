"""RailCap end to end: the transformers engine with RailCapSpec, and the registered strategy.

A random tiny model rarely walks back onto a trajectory once off it, so the
engine tests build the rails from the Identity samples themselves (same seeds):
each sample starts on its own rails and RailCap must knock it off.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.errors import ConfigError
from railsweep.interventions import RailCapSpec
from railsweep.strategies.base import DecodeSettings, EvalContext, build_strategy, config_dict, make_config
from railsweep.strategies.railcap.strategy import RailCapConfig
from railsweep.tasks.base import Grade, Question
from railsweep.testing import make_tiny_model

PROMPT = "Question: Janet sells 16 eggs every day.\nAnswer:"


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    path = make_tiny_model(tmp_path_factory.mktemp("sharp") / "llama", seed=0, logit_scale=3.0)
    eng = TransformersEngine(path, device="cpu", dtype="float32")
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def trajectory(engine) -> tuple[int, ...]:
    """All Identity samples back to back: every sample then rides these rails from its first token on."""
    return tuple(t for s in samples(engine, None) for t in s.token_ids)


def successors(traj: Sequence[int], n: int) -> dict[tuple[int, ...], set[int]]:
    H: dict[tuple[int, ...], set[int]] = {}
    for k in range(len(traj) - n):
        H.setdefault(tuple(traj[k : k + n]), set()).add(traj[k + n])
    return H


def rail_hits(tokens: Sequence[int], H: dict, n: int) -> tuple[int, int]:
    """(steps whose last n tokens are a key of H, of those the steps that emitted a successor)."""
    keyed = [t for t in range(n, len(tokens)) if tuple(tokens[t - n : t]) in H]
    return len(keyed), sum(tokens[t] in H[tuple(tokens[t - n : t])] for t in keyed)


def samples(engine, intervention, n=12, seed=3):
    req = Request(
        PROMPT, SamplingSpec(n=n, temperature=0.7, max_new_tokens=40, seed=seed), intervention=intervention
    )
    return engine.generate([req])[0].samples


def test_empty_trajectory_equals_identity_token_for_token(engine):
    plain = samples(engine, None)
    for spec in (RailCapSpec((), n=1, mode="ban"), RailCapSpec((5, 6, 7), n=4, mode="ban")):
        off = samples(engine, spec)
        assert [s.token_ids for s in off] == [s.token_ids for s in plain]
        assert [s.text for s in off] == [s.text for s in plain]
        assert all(s.triggers == 0 for s in off)


@pytest.mark.parametrize("n", [1, 2, 4])
def test_ban_never_emits_a_trajectory_successor_and_counts_every_keyed_step(engine, trajectory, n):
    H = successors(trajectory, n)
    assert all(rail_hits(s.token_ids, H, n)[1] > 0 for s in samples(engine, None))  # Identity rides the rails
    banned = samples(engine, RailCapSpec(trajectory, n=n, mode="ban", successor="all"))
    for s in banned:
        keyed, hits = rail_hits(s.token_ids, H, n)
        assert hits == 0 and keyed > 0
        assert s.triggers == keyed  # a ban changes the logits at every keyed step


def test_cap_lowers_how_often_samples_follow_the_trajectory(engine, trajectory):
    H = successors(trajectory, 4)
    plain = sum(rail_hits(s.token_ids, H, 4)[1] for s in samples(engine, None))
    capped_samples = samples(engine, RailCapSpec(trajectory, n=4, mode="cap", successor="all"))
    capped = sum(rail_hits(s.token_ids, H, 4)[1] for s in capped_samples)
    assert sum(s.triggers for s in capped_samples) > 0
    assert capped < plain / 2


@dataclass
class EchoTask:
    """Correct when the response contains the gold string (enough to exercise the readout)."""

    name: str = "echo"
    stop: tuple[str, ...] = ("\n\n",)

    def questions(self) -> Sequence[Question]:
        return [Question(i, f"Q{i}", "", gold) for i, gold in enumerate(["1", "2", "3"])]

    def prompt(self, question: Question) -> str:
        return f"Question: how many eggs for {question.gold} days?\nAnswer:"

    def grade(self, response: str, question: Question) -> Grade:
        return Grade(question.gold in response, None, "none")


def test_strategy_records_trajectory_length_and_triggers_per_question(engine):
    task = EchoTask()
    ctx = EvalContext(
        engine, task, adapter=None, settings=DecodeSettings(m=6, temperature=0.7, max_new_tokens=30)
    )
    qs = task.questions()
    outcomes = build_strategy("railcap", {"n": 1, "mode": "ban"}).run(ctx, qs)
    assert [o.index for o in outcomes] == [0, 1, 2]
    for o in outcomes:
        assert o.m == 6 and len(o.samples) == 6 and o.c == sum(g.correct for g in o.grades)
        assert o.greedy is not None and o.extras["trajectory_len"] == len(o.greedy.token_ids)
        assert o.extras["triggers"] == sum(s.triggers for s in o.samples)
        H = successors(o.greedy.token_ids, 1)
        assert all(rail_hits(s.token_ids, H, 1)[1] == 0 for s in o.samples)
    assert sum(o.extras["triggers"] for o in outcomes) > 0


def test_config_rejects_bad_values_and_round_trips():
    for bad in ({"n": 0}, {"mode": "clip"}, {"successor": "middle"}):
        with pytest.raises(ConfigError):
            make_config("railcap", bad)
    cfg = make_config("railcap", {"n": 3, "mode": "ban", "successor": "all"})
    assert isinstance(cfg, RailCapConfig) and make_config("railcap", config_dict(cfg)) == cfg
    assert cfg.spec([1, 2]) == RailCapSpec((1, 2), n=3, mode="ban", successor="all")


def test_a_cell_checks_railcap_settings_once_not_once_per_question(monkeypatch):
    import railsweep.interventions.railcap as core

    calls = []
    real = core.check_settings
    monkeypatch.setattr(core, "check_settings", lambda *a: (calls.append(a), real(*a))[1])
    cfg = RailCapConfig(n=3, mode="ban", spare_numbers=True)  # the cell's one check (through its own import)
    specs = [cfg.spec([q, q + 1, 2], spare=(2,)) for q in range(5)]
    assert calls == []  # the per-question specs do not check again
    assert specs[0] == RailCapSpec((0, 1, 2), n=3, mode="ban", spare=(2,)) and len(calls) == 1
    with pytest.raises(ConfigError, match="n=0"):
        RailCapSpec((1, 2), n=0)  # a spec built from unchecked values still checks itself
