"""RailCap's batched core and the transformers processors against naive per-row re-computations."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch

from railsweep.engines.hf_processors import BanTopProcessor, RailCapProcessor
from railsweep.interventions.ban_top import BanTopSpec
from railsweep.interventions.ban_top import ban_top as apply_ban_top
from railsweep.interventions.railcap import (
    MODE_CODES,
    SUCCESSOR_CODES,
    RailCapSpec,
    apply_railcap,
    pack_specs,
    railcap_targets,
)
from railsweep.interventions.railcap_runs import RunTable, advance_runs_, run_table, run_targets, start_runs

V = 12
ALPHABET = 4  # tokens 0..3 only: trajectories full of repeated n-grams


def naive_railcap(logits, traj, gen, n, successor, mode):
    """Algorithm 1 for one row, written the obvious way: build H, look up the last n tokens."""
    out = logits.clone()
    if n == 0 or len(gen) < n:
        return out, False
    key = tuple(gen[-n:])
    succs = [traj[k + n] for k in range(len(traj) - n) if tuple(traj[k : k + n]) == key]
    if not succs:
        return out, False
    if successor == "last":
        succs = succs[-1:]
    elif successor == "first":
        succs = succs[:1]
    v2 = sorted(logits.tolist())[-2]
    for x in succs:
        out[x] = float("-inf") if mode == "ban" else min(float(out[x]), v2)
    return out, not torch.equal(out, logits)


def random_rows(rng: random.Random, B: int, n_choices, modes, successors):
    rows = []
    for _ in range(B):
        n = rng.choice(n_choices)
        traj = [rng.randrange(ALPHABET) for _ in range(rng.choice([0, 1, n, n + 1, rng.randrange(0, 40)]))]
        gen = [rng.randrange(ALPHABET) for _ in range(rng.randrange(0, 12))]
        if (
            traj and len(traj) > n and rng.random() < 0.5
        ):  # make the last n generated tokens a trajectory n-gram
            k = rng.randrange(0, len(traj) - n)
            gen = gen + traj[k : k + n]
        rows.append((traj, gen, n, rng.choice(successors), rng.choice(modes)))
    return rows


def run_core(rows, logits, N):
    B = len(rows)
    T = max([len(r[0]) for r in rows] + [1])
    traj = torch.full((B, T), -1, dtype=torch.long)
    recent = torch.full((B, N), -1, dtype=torch.long)
    for b, (t, g, *_rest) in enumerate(rows):
        traj[b, : len(t)] = torch.tensor(t, dtype=torch.long)
        tail = g[-N:] if N else []
        if tail:
            recent[b, N - len(tail) :] = torch.tensor(tail, dtype=torch.long)
    meta = torch.tensor(
        [[len(t), len(g), n, SUCCESSOR_CODES[s], MODE_CODES[m]] for t, g, n, s, m in rows], dtype=torch.long
    ).T
    return apply_railcap(logits.clone(), traj, meta[0], recent, meta[1], meta[2], meta[3], meta[4])


def assert_matches_naive(rows, logits, N):
    got, trig = run_core(rows, logits, N)
    for b, (t, g, n, s, m) in enumerate(rows):
        want, want_trig = naive_railcap(logits[b], t, g, n, s, m)
        assert torch.equal(got[b], want), (b, t, g, n, s, m)
        assert bool(trig[b]) == want_trig, (b, t, g, n, s, m)


@pytest.mark.parametrize("successor", ["last", "first", "all"])
@pytest.mark.parametrize("mode", ["cap", "ban"])
@pytest.mark.parametrize("n", range(1, 9))
def test_core_equals_naive_reference_on_repeated_ngrams(n, mode, successor):
    rng = random.Random(1000 * n + 10 * len(mode) + len(successor))
    rows = random_rows(rng, 64, [n], [mode], [successor])
    logits = torch.randn(64, V, generator=torch.Generator().manual_seed(n))
    logits[::3, :ALPHABET] += 3.0  # trajectory tokens are often the argmax, so cap really changes them
    assert_matches_naive(rows, logits, N=n)
    assert_matches_naive(rows, logits, N=n + 3)  # a wider recent buffer than n changes nothing


def test_core_serves_mixed_rows_and_disabled_rows_in_one_batch():
    rng = random.Random(7)
    rows = random_rows(rng, 200, [0, 1, 2, 3, 5, 8], ["cap", "ban"], ["last", "first", "all"])
    logits = torch.randn(200, V, generator=torch.Generator().manual_seed(7))
    logits[::2, :ALPHABET] += 3.0
    assert_matches_naive(rows, logits, N=8)
    _, trig = run_core(rows, logits, N=8)
    assert trig.any() and not trig.all()
    assert not any(trig[b] for b, r in enumerate(rows) if r[2] == 0)


def test_trajectory_shorter_than_n_plus_one_never_triggers():
    traj = [1, 2, 3]
    rows = [(traj, [1, 2, 3], 3, "all", "ban"), (traj[:2], [0, 1, 2], 2, "all", "ban")]
    logits = torch.randn(2, V)
    got, trig = run_core(rows, logits, N=3)
    assert torch.equal(got, logits) and not trig.any()


def test_row_with_fewer_generated_than_n_never_triggers_even_if_buffer_matches():
    # gen_len says 2 tokens were generated, although the (stale) buffer holds a matching 3-gram
    traj = torch.tensor([[1, 2, 3, 0]])
    logits = torch.zeros(1, V)
    logits[0, 0] = 5.0
    args = (torch.tensor([4]), torch.tensor([[1, 2, 3]]))
    one = torch.ones(1, dtype=torch.long)
    codes = (torch.tensor([3]), torch.tensor([SUCCESSOR_CODES["last"]]), torch.tensor([MODE_CODES["ban"]]))
    out, trig = apply_railcap(logits.clone(), traj, *args, 2 * one, *codes)
    assert torch.equal(out, logits) and not trig.any()
    out, trig = apply_railcap(logits.clone(), traj, *args, 3 * one, *codes)
    assert out[0, 0] == float("-inf") and trig.all()


def test_cap_ties_the_argmax_successor_with_the_runner_up_and_leaves_others():
    logits = torch.tensor([[0.0, 4.0, 2.0, 1.0, 3.0]])
    spec = pack_specs([RailCapSpec((7, 1, 7, 2), n=1, successor="all")])
    # "7" is followed by 1 (the argmax) and by 2 (below the runner-up 3.0)
    out, trig = apply_railcap(
        logits.clone(), spec.traj, spec.traj_len, torch.tensor([[7]]), torch.tensor([5]), spec.n,
        spec.successor, spec.mode,
    )  # fmt: skip
    assert out.tolist() == [[0.0, 3.0, 2.0, 1.0, 3.0]] and trig.tolist() == [True]


def test_pack_specs_marks_missing_specs_disabled_and_pads_with_minus_one():
    b = pack_specs([RailCapSpec((5, 6, 7), n=2, mode="ban", successor="first"), None])
    assert b.traj.tolist() == [[5, 6, 7], [-1, -1, -1]]
    assert b.traj_len.tolist() == [3, 0] and b.n.tolist() == [2, 0]
    assert b.mode.tolist() == [MODE_CODES["ban"], 0] and b.successor.tolist() == [SUCCESSOR_CODES["first"], 0]
    assert b.min_n == 2


def test_processor_reads_only_generated_tokens_from_its_buffer():
    rng = random.Random(3)
    B, S = 48, 15
    specs = []
    for b in range(B):
        traj = tuple(rng.randrange(ALPHABET) for _ in range(rng.randrange(0, 30)))
        specs.append(
            None if b % 7 == 0 else RailCapSpec(traj, n=rng.randint(1, 5), mode=rng.choice(["cap", "ban"]))
        )
    generated = torch.randint(0, ALPHABET, (B, S), generator=torch.Generator().manual_seed(3))
    proc = RailCapProcessor(specs)
    for step in range(S):
        trig = _step_equals_naive(proc, specs, generated, step)
        if step == 0:
            assert trig is None  # nothing generated yet: prompt tokens are never consulted


def _step_equals_naive(proc, specs, generated, step, where=()):
    """One processor call on seeded logits, row by row against :func:`naive_railcap`; its trigger mask."""
    logits = torch.randn(len(specs), V, generator=torch.Generator().manual_seed(step))
    logits[:, :ALPHABET] += 2.0
    out, trig = proc(logits.clone(), generated, step)
    for b, s in enumerate(specs):
        if s is None:
            want, wt = logits[b], False
        else:
            gen = generated[b, :step].tolist()
            want, wt = naive_railcap(logits[b], list(s.trajectory), gen, s.n, s.successor, s.mode)
        assert torch.equal(out[b], want), (*where, step, b)
        assert (trig is not None and bool(trig[b])) == wt, (*where, step, b)
    return trig


def test_ban_top_bans_the_argmax_only_in_the_first_positions():
    logits = torch.randn(6, V, generator=torch.Generator().manual_seed(0))
    positions = torch.tensor([0, 1, 2, 3, 3, 5])
    gen_len = torch.tensor([0, 0, 2, 1, 3, 4])
    out, trig = apply_ban_top(logits.clone(), positions, gen_len)
    for b in range(6):
        want = logits[b].clone()
        if gen_len[b] < positions[b]:
            want[logits[b].argmax()] = float("-inf")
        assert torch.equal(out[b], want)
    assert trig.tolist() == [False, True, False, True, False, True]


def test_ban_top_processor_switches_off_after_its_last_position():
    proc = BanTopProcessor([BanTopSpec(2), None, BanTopSpec(1)])
    logits = torch.randn(3, V)
    gen = torch.zeros(3, 4, dtype=torch.long)
    assert proc(logits.clone(), gen, 0)[1].tolist() == [True, False, True]
    assert proc(logits.clone(), gen, 1)[1].tolist() == [True, False, False]
    out, trig = proc(logits.clone(), gen, 2)
    assert trig is None and torch.equal(out, logits)


@pytest.mark.parametrize(
    "row, traj, successor, changed",
    [
        ([4.0, 4.0, 1.0, 0.0], (7, 0), "last", False),  # target tied with a non-target at the max
        ([4.0, 4.0, 1.0, 0.0], (7, 0, 7, 1), "all", False),  # two targets tied at the max
        ([4.0, 3.0, 1.0, 0.0], (7, 0, 7, 0), "all", True),  # the same target listed twice
        ([4.0, 3.0, 3.0, 0.0], (7, 0, 7, 2), "all", True),  # unique max capped to a tied runner-up
        ([1.0, 3.0, 3.0, 0.0], (7, 1, 7, 2), "all", False),  # both targets at the tied max
    ],
)
def test_cap_handles_tied_and_duplicated_targets_like_the_naive_reference(row, traj, successor, changed):
    logits = torch.tensor([row + [-1.0] * (V - 4)])
    rows = [(list(traj), [7], 1, successor, "cap")]
    got, trig = run_core(rows, logits, N=1)
    want, want_trig = naive_railcap(logits[0], list(traj), [7], 1, successor, "cap")
    assert torch.equal(got[0], want) and bool(trig[0]) == want_trig == changed


def _random_batch(rng: random.Random, B: int, traj_len: int):
    specs = []
    for b in range(B):
        traj = tuple(
            rng.randrange(ALPHABET) for _ in range(rng.choice([0, 1, 2, rng.randrange(0, traj_len)]))
        )
        specs.append(
            None
            if b % 9 == 0
            else RailCapSpec(
                traj,
                n=rng.randint(1, 6),
                mode=rng.choice(["cap", "ban"]),
                successor=rng.choice(["last", "first", "all"]),
            )
        )
    return specs


def _subset(table: RunTable, rows: torch.Tensor) -> RunTable:
    return RunTable(*(getattr(table, f.name).index_select(1, rows) for f in dataclasses.fields(RunTable)))


@pytest.mark.parametrize("seed", range(4))
def test_match_runs_give_the_targets_of_railcap_targets_while_rows_are_dropped(seed):
    rng = random.Random(seed)
    B, S = 60, 30
    b = pack_specs(_random_batch(rng, B, 40))
    table, runs = run_table(b), None
    runs = start_runs(table)
    alive = torch.arange(B)  # original row of each row of the run state
    generated = torch.randint(0, ALPHABET, (B, S), generator=torch.Generator().manual_seed(seed))
    N, kept = int(b.n.max()), 0
    for step in range(S + 1):
        recent = torch.full((B, N), -1, dtype=torch.long)
        tail = generated[:, max(0, step - N) : step]
        recent[:, N - tail.shape[1] :] = tail
        gen_len = torch.full((B,), step, dtype=torch.long)
        want = railcap_targets(b.traj, b.traj_len, recent, gen_len, b.n, b.successor)
        got = run_targets(runs, table, torch.arange(len(alive)))
        assert torch.equal(got[1], want[1][alive]), step
        assert torch.equal(got[0], want[0][alive]), step
        kept += int(got[1].any(1).sum())
        if step == S:
            break
        if step % 7 == 3:  # drop a random subset of rows from the state, as a batch drops finished rows
            keep = torch.tensor(sorted(rng.sample(range(len(alive)), k=max(1, len(alive) * 3 // 4))))
            runs, table, alive = runs[:, keep], _subset(table, keep), alive[keep]
        advance_runs_(runs, table, generated[alive, step])
    assert len(alive) < B and kept > 0


@pytest.mark.parametrize("successor", ["last", "first", "all"])
def test_processor_equals_naive_reference_step_by_step_and_after_a_restart(successor):
    rng = random.Random(len(successor))
    B, S = 40, 14
    specs = [
        None if s is None else dataclasses.replace(s, successor=successor) for s in _random_batch(rng, B, 40)
    ]
    # rows follow their own trajectory (long matching runs): the first decode its start, the
    # second (a restart at step 0 that also skips steps) where the first left off
    road = torch.randint(0, ALPHABET, (B, 2 * S), generator=torch.Generator().manual_seed(0))
    for b, s in enumerate(specs):
        if s is not None and b % 2 == 0:
            road[b, : len(s.trajectory[: 2 * S])] = torch.tensor(s.trajectory[: 2 * S], dtype=torch.long)
    proc = RailCapProcessor(specs)
    for generated, steps in [(road[:, :S], range(S)), (road[:, S - 1 :], range(0, S, 3))]:
        for step in steps:
            _step_equals_naive(proc, specs, generated, step, where=(steps,))
