"""TED: the filter against a naive re-computation, its edge cases, and the strategy's counts on a real tiny model."""

from __future__ import annotations

import random

import pytest
from baselines_world import make_ctx, toy_task

from railsweep.errors import ConfigError
from railsweep.strategies import build_strategy, make_config
from railsweep.strategies.ted import TEDConfig, ted_filter


def naive_levenshtein(a, b):
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i]
        for j, y in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def naive_ted(greedy, samples, tau, max_length, dedup):
    g = greedy[:max_length]
    kept, keep = [], []
    for ids, text in samples:
        d = naive_levenshtein(g, ids[: len(g)])
        ok = not (dedup and text in kept) and d > tau
        keep.append(ok)
        if ok:
            kept.append(text)
    return keep


def test_filter_matches_naive_recomputation_on_lopsided_inputs():
    rng = random.Random(0)
    for trial in range(200):
        g = [rng.randrange(6) for _ in range(rng.randrange(0, 130))]
        samples = []
        for _ in range(rng.randrange(1, 12)):
            if samples and rng.random() < 0.3:
                samples.append(samples[rng.randrange(len(samples))])  # exact duplicate
                continue
            s = list(g)
            for _ in range(rng.randrange(0, 5)):  # a few random edits of the greedy path
                op, at = rng.randrange(3), rng.randrange(len(s) + 1)
                if op == 0:
                    s.insert(at, rng.randrange(6))
                elif s and at < len(s):
                    s[at : at + 1] = [] if op == 1 else [rng.randrange(6)]
            s = (
                s[: rng.randrange(len(s) + 1)]
                if rng.random() < 0.2
                else s + [rng.randrange(6)] * rng.randrange(3)
            )
            samples.append((s, " ".join(map(str, s))))
        tau, dedup = rng.choice([-1, 0, 2, 3.5]), rng.random() < 0.5
        cfg = TEDConfig(tau=tau, max_length=rng.choice([5, 100]), dedup=dedup)
        keep, dist = ted_filter(g, samples, cfg)
        assert keep == naive_ted(g, samples, tau, cfg.max_length, dedup), trial
        assert dist == [
            naive_levenshtein(g[: cfg.max_length], s[: len(g[: cfg.max_length])]) for s, _ in samples
        ]


def test_samples_are_cut_to_the_greedy_length_so_a_longer_continuation_is_dropped():
    keep, dist = ted_filter([1, 2, 3], [([1, 2, 3, 9, 9, 9, 9], "a"), ([1, 2, 4, 9], "b")], TEDConfig(tau=0))
    assert dist == [0, 1] and keep == [False, True]


def test_only_the_first_max_length_greedy_tokens_are_compared():
    g = list(range(150))
    s = list(range(100)) + [7] * 50  # differs only after token 100
    keep, dist = ted_filter(g, [(s, "x")], TEDConfig())
    assert dist == [0] and keep == [False]


def test_duplicates_of_kept_samples_are_dropped_but_not_duplicates_of_dropped_ones():
    g = [1, 2, 3, 4, 5]
    far = [9, 9, 9, 9, 9]
    samples = [(g, "same"), (far, "far"), (far, "far"), (g, "same")]
    assert ted_filter(g, samples, TEDConfig(tau=2, dedup=True))[0] == [False, True, False, False]
    assert ted_filter(g, samples, TEDConfig(tau=2, dedup=False))[0] == [False, True, True, False]


def test_empty_greedy_drops_every_sample():
    keep, dist = ted_filter([], [([1, 2], "a"), ([3], "b")], TEDConfig())
    assert keep == [False, False] and dist == [0, 0]


def test_bad_tau_and_max_length_are_rejected_with_their_values():
    with pytest.raises(ConfigError, match="max_length=0"):
        make_config("ted", {"max_length": 0})
    with pytest.raises(ConfigError, match="'two'"):
        make_config("ted", {"tau": "two"})


def test_strategy_counts_only_kept_samples_and_keeps_the_raw_first_sample_readout(world_engine):
    task = toy_task(4)
    ctx = make_ctx(world_engine, task, m=8, max_new_tokens=12)
    outs = build_strategy("ted", {"tau": 2}).run(ctx, task.questions())
    identity = build_strategy("identity").run(ctx, task.questions())
    for o, ident in zip(outs, identity):
        assert [s.token_ids for s in o.samples] == [s.token_ids for s in ident.samples]  # same sampler
        keep, _ = ted_filter(o.greedy.token_ids, [(s.token_ids, s.text) for s in o.samples], TEDConfig(tau=2))
        assert o.m == sum(keep) == o.extras["n_kept"]
        assert o.c == sum(k and g.correct for k, g in zip(keep, o.grades))
        assert o.r01 == int(o.grades[0].correct)
        assert o.extras["n_kept"] + o.extras["n_dup"] + o.extras["n_close"] == 8
        hist = sum(v for k, v in o.extras.items() if k.startswith("ted_dist_") and k[9].isdigit())
        assert hist == 8
    # the peaked world has samples that stay on the greedy path: TED must drop some of them
    assert sum(o.extras["n_close"] for o in outs) > 0
    assert sum(o.m for o in outs) < 4 * 8


def test_a_question_with_nothing_kept_scores_zero_not_excluded(world_engine):
    task = toy_task(2)
    ctx = make_ctx(world_engine, task, m=4, max_new_tokens=12)
    outs = build_strategy("ted", {"tau": 1e9}).run(ctx, task.questions())
    assert [(o.c, o.m, o.solve_prob) for o in outs] == [(0, 0, 0.0), (0, 0, 0.0)]
    assert len(outs) == 2
