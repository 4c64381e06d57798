"""Both vLLM processors against a naive per-row reference, under random request churn.

The V1 processor is driven with vLLM's own ``BatchUpdate`` (removed / added /
moved, slot reuse, live output lists growing in place); the MRV2 processor with
vLLM's own ``LogitsProcRequestState`` / ``LogitsContext`` over CPU tensors
(rows shuffled against slots every step, slots recycled). Trajectories and
outputs draw from a small alphabet so n-grams repeat and match often.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from vllm import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality
from vllm.v1.worker.gpu.sample.logits_processor import LogitsContext, LogitsProcRequestState

from railsweep.engines.vllm_processors import (
    RailsweepV1Processor,
    RailsweepV2Processor,
    extra_args_for,
)
from railsweep.interventions import BanTopSpec, RailCapSpec

V = 40
ALPHABET = 6  # tokens 0..5: n-grams repeat


def _random_spec(rng: random.Random):
    r = rng.random()
    if r < 0.15:
        return None
    if r < 0.3:
        return BanTopSpec(positions=rng.randint(0, 4))
    traj = tuple(rng.randrange(ALPHABET) for _ in range(rng.randint(0, 14)))
    return RailCapSpec(
        trajectory=traj,
        n=rng.randint(1, 8),
        mode=rng.choice(["cap", "ban"]),
        successor=rng.choice(["last", "first", "all"]),
        stop_after_departure=rng.random() < 0.3,
        spare=(rng.randrange(ALPHABET),) if rng.random() < 0.3 else (),
    )


def _reference(
    logits: torch.Tensor, spec, out: list[int], req: dict | None = None
) -> tuple[torch.Tensor, bool]:
    """Per-row textbook RailCap (method.md §3) and ban-top-1; with ``req`` (the request's own state across
    steps) also RailCap's restrictions: spared targets dropped, no caps after the first actual departure."""
    row = logits.clone()
    if spec is None:
        return row, False
    if isinstance(spec, RailCapSpec) and req is not None:
        armed = req.pop("armed", None)  # the targets of its last changed step, against what it then sampled
        if armed is not None and out[-1] not in armed:
            req["departed"] = True
        if spec.stop_after_departure and req.get("departed"):
            return row, False
    if isinstance(spec, BanTopSpec):
        if len(out) < spec.positions:
            row[int(row.argmax())] = float("-inf")
            return row, True
        return row, False
    g, n = list(spec.trajectory), spec.n
    if len(out) < n:
        return row, False
    key = out[-n:]
    succ = [g[k + n] for k in range(len(g) - n) if g[k : k + n] == key]
    if not succ:
        return row, False
    chosen = {"last": succ[-1:], "first": succ[:1], "all": succ}[spec.successor]
    chosen = [x for x in chosen if x not in spec.spare]
    v2 = torch.topk(logits, 2).values[1]
    val = float("-inf") if spec.mode == "ban" else v2
    changed = False
    for x in set(chosen):
        if row[x] > val:
            row[x] = val
            changed = True
    if changed and req is not None:
        req["armed"] = set(chosen)
    return row, changed


def _logits(rng: random.Random, rows: int) -> torch.Tensor:
    t = torch.randn(rows, V, generator=torch.Generator().manual_seed(rng.randrange(1 << 30)))
    for r in range(rows):  # often make a trajectory token the argmax so cap triggers
        if rng.random() < 0.6:
            t[r, rng.randrange(ALPHABET)] += 6.0
    return t


def _params(spec, key: str, seed: int, entropy_steps: int = 0) -> SamplingParams:
    return SamplingParams(seed=seed, extra_args=extra_args_for(spec, key, entropy_steps))


def _entropy(row: torch.Tensor) -> float:
    p = torch.softmax(row.double(), -1)
    return float(-(p[p > 0] * p[p > 0].log()).sum())


def _check_results(got, expected_triggers, expected_ents):
    triggers, ents = got
    assert {k: v for k, v in triggers.items() if v} == {k: v for k, v in expected_triggers.items() if v}
    assert sum(expected_triggers.values()) > 0
    assert {k for k, v in ents.items() if v} == {k for k, v in expected_ents.items() if v}
    for k, want in expected_ents.items():
        assert ents[k] == pytest.approx(want, abs=1e-4)


@pytest.mark.parametrize("seed", range(6))
def test_v1_processor_matches_reference_under_add_remove_move_and_slot_reuse(seed):
    rng = random.Random(seed)
    proc = RailsweepV1Processor(None, torch.device("cpu"), False)
    batch: list[dict | None] = []  # persistent batch: row -> request
    expected_triggers: dict[tuple[str, int], int] = {}
    expected_ents: dict[tuple[str, int], list[float]] = {}
    uid = 0
    for _step in range(60):
        removed, added, moved = [], [], []
        for row, req in enumerate(batch):  # finish some requests
            if req is not None and rng.random() < 0.12:
                batch[row] = None
                removed.append(row)
        for _ in range(rng.randint(0, 3)):  # add into the lowest free row (vLLM reuses removed rows)
            uid += 1
            spec = _random_spec(rng)
            ent = rng.choice([0, 0, 5, 40])
            req = {"spec": spec, "out": [], "key": (f"k{uid}", uid), "ent": ent}
            free = [i for i, r in enumerate(batch) if r is None]
            row = free[0] if free else len(batch)
            if row == len(batch):
                batch.append(None)
            batch[row] = req
            if row in removed:
                removed.remove(row)
            added.append((row, _params(spec, f"k{uid}", uid, ent), [1, 2, 3], req["out"]))
        if rng.random() < 0.5 and len(batch) >= 2:  # swaps and condensing moves
            a, b = rng.sample(range(len(batch)), 2)
            batch[a], batch[b] = batch[b], batch[a]
            moved.append((a, b, MoveDirectionality.SWAP))
        while batch and batch[-1] is None:
            batch.pop()
        holes = [i for i, r in enumerate(batch) if r is None]
        if holes and rng.random() < 0.5:
            hole, last = holes[0], len(batch) - 1
            batch[hole], batch[last] = batch[last], None
            moved.append((last, hole, MoveDirectionality.UNIDIRECTIONAL))
            batch.pop()
        bu = BatchUpdate(batch_size=len(batch), removed=removed, added=added, moved=moved)
        proc.update_state(bu if (removed or added or moved) else None)
        if not batch:
            continue
        logits = _logits(rng, len(batch))
        want = logits.clone()
        for row, req in enumerate(batch):
            if req is None:
                continue
            want[row], trig = _reference(logits[row], req["spec"], req["out"], req)
            if req["spec"] is not None:
                expected_triggers[req["key"]] = expected_triggers.get(req["key"], 0) + int(trig)
            if len(req["out"]) < req["ent"]:
                expected_ents.setdefault(req["key"], []).append(_entropy(want[row]))
        got = proc.apply(logits.clone())
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        for req in batch:  # the runner appends sampled tokens to the live output lists
            if req is not None:
                req["out"].append(rng.randrange(ALPHABET))
    _check_results(proc.pop_results(), expected_triggers, expected_ents)
    triggers, ents = proc.pop_results()  # popped: nothing is reported twice
    assert not any(triggers.values()) and not any(ents.values())


def _v2_state(R: int, L: int):
    ids = torch.full((R, L), -7, dtype=torch.int32)
    prompt = torch.zeros(R, dtype=torch.int32)
    total = torch.zeros(R, dtype=torch.int32)
    rs = LogitsProcRequestState(
        device=torch.device("cpu"),
        max_num_reqs=R,
        vocab_size=V,
        all_token_ids=SimpleNamespace(gpu=ids),
        prompt_len=SimpleNamespace(gpu=prompt),
        prefill_len=None,
        total_len=SimpleNamespace(gpu=total),
    )
    return rs, ids, prompt, total


def _ctx(rows_slots: list[int]) -> LogitsContext:
    t = torch.tensor(rows_slots, dtype=torch.int32)
    z = torch.zeros(len(rows_slots), dtype=torch.int32)
    return LogitsContext(
        expanded_idx_mapping=t,
        idx_mapping=t,
        idx_mapping_np=np.array(rows_slots, dtype=np.int32),
        expanded_local_pos=z,
        input_ids=z,
        pos=z,
        seq_lens_upper_bound_np=np.zeros(len(rows_slots), np.int32),
    )


@pytest.mark.parametrize("seed", range(6))
def test_v2_processor_matches_reference_with_shuffled_rows_and_recycled_slots(seed):
    rng = random.Random(100 + seed)
    R, L = 12, 96
    rs, ids, prompt, total = _v2_state(R, L)
    proc = RailsweepV2Processor(SimpleNamespace(model_config=SimpleNamespace(max_model_len=L)), rs)
    live: dict[int, dict] = {}
    expected_triggers: dict[tuple[str, int], int] = {}
    expected_ents: dict[tuple[str, int], list[float]] = {}
    uid = 0
    for _step in range(60):
        for slot in list(live):  # finish some; their slots return to the free list
            if rng.random() < 0.12 or total[slot] >= L - 1:
                del live[slot]
        free = [s for s in range(R) if s not in live]
        rng.shuffle(free)
        for slot in free[: rng.randint(0, 3)]:  # recycled slots keep stale tokens beyond the new prompt
            uid += 1
            spec = _random_spec(rng)
            plen = rng.randint(1, 5)
            ids[slot, :plen] = torch.tensor([rng.randrange(ALPHABET) for _ in range(plen)], dtype=torch.int32)
            prompt[slot], total[slot] = plen, plen
            ent = rng.choice([0, 0, 5, 40])
            live[slot] = {"spec": spec, "out": [], "key": (f"k{uid}", uid), "ent": ent}
            proc.add_request(slot, _params(spec, f"k{uid}", uid, ent))
        proc.apply_staged_writes()
        if not live:
            continue
        order = list(live)
        rng.shuffle(order)
        logits = _logits(rng, len(order))
        want = logits.clone()
        for row, slot in enumerate(order):
            req = live[slot]
            want[row], trig = _reference(logits[row], req["spec"], req["out"], req)
            if req["spec"] is not None:
                expected_triggers[req["key"]] = expected_triggers.get(req["key"], 0) + int(trig)
            if len(req["out"]) < req["ent"]:
                expected_ents.setdefault(req["key"], []).append(_entropy(want[row]))
        got = proc.apply(logits.clone(), _ctx(order))
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        for slot, req in live.items():  # the runner commits the sampled token on the device
            tok = rng.randrange(ALPHABET)
            ids[slot, int(total[slot])] = tok
            total[slot] += 1
            req["out"].append(tok)
    _check_results(proc.pop_results(), expected_triggers, expected_ents)


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("mode", ["cap", "ban"])
@pytest.mark.parametrize("successor", ["last", "first", "all"])
def test_both_processors_agree_with_reference_for_every_n_mode_and_successor(n, mode, successor):
    rng = random.Random(n * 31 + len(mode) + len(successor))
    specs = [
        RailCapSpec(tuple(rng.randrange(3) for _ in range(20)), n=n, mode=mode, successor=successor)
        for _ in range(8)
    ]
    outs = [[rng.randrange(3) for _ in range(rng.randint(0, 12))] for _ in specs]
    logits = _logits(rng, len(specs))
    want = torch.stack([_reference(logits[i], s, o)[0] for i, (s, o) in enumerate(zip(specs, outs))])
    v1 = RailsweepV1Processor(None, torch.device("cpu"), False)
    added = [(i, _params(s, f"r{i}", i), None, o) for i, (s, o) in enumerate(zip(specs, outs))]
    v1.update_state(BatchUpdate(batch_size=len(specs), removed=[], added=added, moved=[]))
    torch.testing.assert_close(v1.apply(logits.clone()), want, rtol=0, atol=0)

    rs, ids, prompt, total = _v2_state(len(specs), 64)
    v2 = RailsweepV2Processor(SimpleNamespace(model_config=SimpleNamespace(max_model_len=64)), rs)
    for i, (s, o) in enumerate(zip(specs, outs)):
        ids[i, : 2 + len(o)] = torch.tensor([5, 5, *o], dtype=torch.int32)  # two prompt tokens, never matched
        prompt[i], total[i] = 2, 2 + len(o)
        v2.add_request(i, _params(s, f"r{i}", i))
    v2.apply_staged_writes()
    torch.testing.assert_close(v2.apply(logits.clone(), _ctx(list(range(len(specs))))), want, rtol=0, atol=0)


def test_requests_without_railsweep_args_leave_logits_bitwise_untouched():
    logits = _logits(random.Random(0), 3)
    v1 = RailsweepV1Processor(None, torch.device("cpu"), False)
    added = [(i, SamplingParams(seed=i), None, [1, 2, 3]) for i in range(3)]
    v1.update_state(BatchUpdate(batch_size=3, removed=[], added=added, moved=[]))
    assert torch.equal(v1.apply(logits.clone()), logits)
    rs, *_ = _v2_state(3, 16)
    v2 = RailsweepV2Processor(SimpleNamespace(model_config=SimpleNamespace(max_model_len=16)), rs)
    assert [v2.add_request(i, SamplingParams(seed=i)) for i in range(3)] == [False] * 3
    v2.apply_staged_writes()
    assert torch.equal(v2.apply(logits.clone(), _ctx([0, 1, 2])), logits)


@pytest.mark.parametrize(
    "bad",
    [
        {"railsweep": {"key": "a", "railcap": {"traj": [1, 2], "n": 0}}},
        {"railsweep": {"key": "a", "railcap": {"traj": [1, 2], "n": 2, "mode": "soft"}}},
        {"railsweep": {"key": "a", "railcap": {"traj": [1, 2], "n": 2, "successor": "middle"}}},
        {"railsweep": {"key": "a", "railcap": {"traj": [1, 2, 3], "n": 1, "stop": "yes"}}},
        {"railsweep": {"key": "a", "railcap": {"traj": [1, 2, 3], "n": 1, "spare": [-1]}}},
        {"railsweep": {"key": "a", "ban_top": -1}},
        {"railsweep": {"key": "a"}},
        {"railsweep": {"key": "a", "entropy": -3}},
        {"railsweep": [1, 2]},
    ],
)
def test_malformed_extra_args_are_rejected_at_admission(bad):
    for cls in (RailsweepV1Processor, RailsweepV2Processor):
        with pytest.raises(ValueError):
            cls.validate_params(SamplingParams(extra_args=bad))


def test_results_made_under_inference_mode_can_be_popped_outside_it():
    """vLLM runs the processor under inference mode and the worker extension pops results outside it."""
    v1 = RailsweepV1Processor(None, torch.device("cpu"), False)
    spec = RailCapSpec((1, 2, 1, 2, 1), n=1, mode="ban")
    out = [1]
    with torch.inference_mode():
        v1.update_state(
            BatchUpdate(1, removed=[], added=[(0, _params(spec, "r", 7, 3), None, out)], moved=[])
        )
        v1.apply(_logits(random.Random(1), 1))
    triggers, ents = v1.pop_results()
    assert triggers == {("r", 7): 1} and len(ents[("r", 7)]) == 1
