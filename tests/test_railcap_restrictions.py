"""RailCap's restrictions (stop after the first actual departure; spare tokens), step by step against a
naive reference, in the transformers processor and in the stateless core the vLLM adapter uses; switched
off they are the paper's Algorithm 1 exactly."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch

from railsweep.engines.hf_processors import RailCapProcessor
from railsweep.errors import ConfigError
from railsweep.interventions.railcap import (
    MODE_CODES,
    SUCCESSOR_CODES,
    RailCapSpec,
    apply_railcap,
    departures,
    pack_specs,
)

V, ALPHABET = 12, 4


def naive_targets(traj, gen, n, successor):
    """H's successor(s) of the last n generated tokens (Algorithm 1, the obvious way)."""
    if n == 0 or len(gen) < n:
        return []
    key = tuple(gen[-n:])
    succs = [traj[k + n] for k in range(len(traj) - n) if tuple(traj[k : k + n]) == key]
    return {"last": succs[-1:], "first": succs[:1], "all": succs}[successor]


def naive_step(logits, targets, mode):
    out = logits.clone()
    v2 = sorted(logits.tolist())[-2]
    for x in targets:
        out[x] = float("-inf") if mode == "ban" else min(float(out[x]), v2)
    return out, not torch.equal(out, logits)


def naive_run(spec: RailCapSpec, logits_per_step, tokens):
    """The restricted RailCap of one row over a whole decode: targets chosen, spared ones dropped, and after
    a step that changed the logits and sampled none of its targets, no more caps (when asked)."""
    departed, outs = False, []
    for t, logits in enumerate(logits_per_step):
        targets = [x for x in naive_targets(list(spec.trajectory), tokens[:t], spec.n, spec.successor)
                   if x not in spec.spare]  # fmt: skip
        if spec.stop_after_departure and departed:
            targets = []
        out, trig = naive_step(logits, targets, spec.mode)
        outs.append((out, trig))
        if trig and tokens[t] not in targets:
            departed = True
    return outs


def random_specs(rng: random.Random, B: int, restrict):
    specs = []
    for b in range(B):
        traj = tuple(rng.randrange(ALPHABET) for _ in range(rng.choice([0, 2, rng.randrange(0, 30)])))
        specs.append(
            None if b % 9 == 0 else RailCapSpec(
                traj, n=rng.randint(1, 4), mode=rng.choice(["cap", "ban"]),
                successor=rng.choice(["last", "first", "all"]), **restrict(rng),
            )
        )  # fmt: skip
    return specs


def road(specs, S, seed):
    """Tokens that follow each row's trajectory most of the time (long matches) and leave it sometimes."""
    rng = random.Random(seed)
    out = []
    for s in specs:
        traj = list(s.trajectory) if s is not None and s.trajectory else [0]
        row, k = [], rng.randrange(len(traj))
        for _ in range(S):
            if rng.random() < 0.8:
                k = (k + 1) % len(traj)
                row.append(traj[k])
            else:
                row.append(rng.randrange(ALPHABET))
        out.append(row)
    return torch.tensor(out, dtype=torch.long)


def logits_for(B, S):
    g = torch.Generator().manual_seed(1)
    steps = [torch.randn(B, V, generator=g) for _ in range(S)]
    for x in steps:
        x[:, :ALPHABET] += 2.0
    return steps


RESTRICTIONS = {
    "stop": lambda rng: {"stop_after_departure": True},
    "spare": lambda rng: {"spare": tuple(sorted(rng.sample(range(ALPHABET), 2)))},
    "both": lambda rng: {"stop_after_departure": True, "spare": (rng.randrange(ALPHABET),)},
    "mixed": lambda rng: {
        "stop_after_departure": rng.random() < 0.5,
        "spare": (1,) if rng.random() < 0.5 else (),
    },  # fmt: skip
}


@pytest.mark.parametrize("which", list(RESTRICTIONS))
def test_processor_with_restrictions_equals_the_naive_reference_step_by_step(which):
    rng = random.Random(which)
    B, S = 36, 20
    specs = random_specs(rng, B, RESTRICTIONS[which])
    tokens, steps = road(specs, S, seed=len(which)), logits_for(B, S)
    proc = RailCapProcessor(specs)
    got = []
    for t in range(S):
        out, trig = proc(steps[t].clone(), tokens, t)
        got.append((out, trig))
    departed_rows = 0
    for b, s in enumerate(specs):
        want = (
            [(steps[t][b], False) for t in range(S)]
            if s is None
            else naive_run(s, [x[b] for x in steps], tokens[b].tolist())
        )
        for t, ((out, trig), (w_out, w_trig)) in enumerate(zip(got, want)):
            assert torch.equal(out[b], w_out), (which, b, t)
            assert (trig is not None and bool(trig[b])) == w_trig, (which, b, t)
        departed_rows += bool(s is not None and s.stop_after_departure and proc.departed[b])
    if which != "spare":
        assert departed_rows > 0  # the reference was exercised on rows that stopped


def test_restrictions_that_never_bite_change_nothing_against_algorithm_1():
    """Spared tokens outside every trajectory, and samples that take the target at every changed step (so
    never depart), leave Algorithm 1 as it is."""
    rng = random.Random(5)
    B, S = 30, 16
    plain = random_specs(rng, B, lambda r: {})
    restricted = [
        None if s is None else dataclasses.replace(s, spare=(ALPHABET + 3,), stop_after_departure=True)
        for s in plain
    ]
    follow = road(plain, S, seed=5)
    tokens = torch.zeros(B, S, dtype=torch.long)
    steps = logits_for(B, S)
    a, b = RailCapProcessor(plain), RailCapProcessor(restricted)
    changed = 0
    for t in range(S):
        oa, ta = a(steps[t].clone(), tokens, t)
        ob, tb = b(steps[t].clone(), tokens, t)
        assert torch.equal(oa, ob), t
        assert (ta is None) == (tb is None) and (ta is None or torch.equal(ta, tb)), t
        for r, s in enumerate(plain):  # the next token: the target where the logits changed
            targets = (
                []
                if s is None
                else naive_targets(list(s.trajectory), tokens[r, :t].tolist(), s.n, s.successor)
            )
            hit = ta is not None and bool(ta[r])
            tokens[r, t] = targets[0] if hit else follow[r, t]
            changed += hit
    assert changed > 0 and not b.departed.any()


def test_stateless_core_drops_spared_targets_like_the_reference():
    """The vLLM adapter's path: apply_railcap with the packed ``free`` mask."""
    rng = random.Random(2)
    specs = [s for s in random_specs(rng, 40, RESTRICTIONS["spare"]) if s is not None]
    b = pack_specs(specs)
    gen = road(specs, 10, seed=3)
    N = int(b.n.max())
    recent = gen[:, -N:]
    logits = torch.randn(len(specs), V, generator=torch.Generator().manual_seed(0))
    out, trig = apply_railcap(logits.clone(), b.traj, b.traj_len, recent, torch.full((len(specs),), 10),
                              b.n, b.successor, b.mode, free=b.free)  # fmt: skip
    hits = 0
    for i, s in enumerate(specs):
        targets = [
            x
            for x in naive_targets(list(s.trajectory), gen[i].tolist(), s.n, s.successor)
            if x not in s.spare
        ]
        want, w_trig = naive_step(logits[i], targets, s.mode)
        assert torch.equal(out[i], want) and bool(trig[i]) == w_trig, i
        hits += w_trig
    assert hits > 0


def test_departure_is_a_changed_step_that_sampled_none_of_its_targets():
    index = torch.tensor([[2, 0], [2, 0], [2, 3], [2, 0]])
    keep = torch.tensor([[True, False], [True, False], [True, True], [True, False]])
    trig = torch.tensor([True, True, True, False])
    token = torch.tensor([2, 1, 3, 1])
    assert departures(index, keep, trig, token).tolist() == [False, True, False, False]


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"stop_after_departure": "yes"}, "stop_after_departure"),
        ({"spare": (1, -2)}, "spare"),
        ({"spare": [1]}, "spare"),
    ],  # fmt: skip
)
def test_bad_restriction_values_are_config_errors_naming_them(kw, needle):
    with pytest.raises(ConfigError, match=needle):
        RailCapSpec((1, 2, 3), **kw)


def test_a_trajectory_whose_successors_are_all_spared_is_inert():
    assert RailCapSpec((1, 2, 3), n=1, spare=(2, 3)).inert
    assert not RailCapSpec((1, 2, 3), n=1, spare=(2,)).inert
    packed = pack_specs([RailCapSpec((5, 6, 7), n=1, spare=(7,)), None])
    assert packed.free.tolist() == [[True, False], [True, True]]
    assert MODE_CODES and SUCCESSOR_CODES  # the wire codes the vLLM adapter packs are unchanged
