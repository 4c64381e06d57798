"""The pure parts of ``railsweep rails``: token classes, RailCap's look-ups, caps and departures,
and the forced-runner-up intervention's logits edit."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from railsweep.diagnostics.positions import (
    FINAL,
    NUMBER,
    WORDING,
    caps_and_departures,
    exposed_steps,
    position_class,
    rail_index,
    rail_targets,
    run_class,
)
from railsweep.engines.hf_processors import ForceRunnerUpProcessor
from railsweep.errors import ConfigError
from railsweep.interventions.force_runner_up import ForceRunnerUpSpec
from railsweep.interventions.railcap import railcap_targets


@pytest.mark.parametrize(
    "prefix, piece, want",
    [
        ("Tom has", " 5", NUMBER),
        ("Tom has 5", " apples", WORDING),
        ("5 +", " 3", NUMBER),
        ("5 + 3 = 8. The answer is", " 8", FINAL),
        ("5 + 3 = 8. the answer is: $", "8", FINAL),
        ("The answer is 1", "2", FINAL),  # a digit-split number continues the final answer
        ("The answer is 12", ".", WORDING),
        ("The answer is", " eight", WORDING),
        ("The answer is 12. Then 3", "4", NUMBER),
        ("", "=", WORDING),
    ],
)
def test_position_class_separates_wording_numbers_and_the_final_answer(prefix, piece, want):
    assert position_class(prefix, piece) == want


def test_a_run_takes_the_class_of_its_most_consequential_forced_position():
    assert run_class([WORDING, NUMBER, WORDING]) == NUMBER
    assert run_class([FINAL, WORDING]) == FINAL
    assert run_class([WORDING]) == WORDING
    assert run_class([]) is None


def test_rail_index_keeps_the_successor_of_the_last_occurrence():
    rail = [1, 2, 3, 1, 2, 4, 5]
    assert rail_index(rail, 2) == {(1, 2): 4, (2, 3): 1, (3, 1): 2, (2, 4): 5}
    assert rail_index(rail[:2], 2) == {}  # an n-gram at the very end has no successor


def test_exposed_steps_count_lookups_of_the_rail_by_hand():
    rail = [10, 11, 12, 13, 14]
    # steps 2..5 look up (10,11)->12, (11,12)->13, (12,99) miss, (99,13) miss
    response = [10, 11, 12, 99, 13, 14]
    assert rail_targets(response, rail, 2) == [None, None, 12, 13, None, None]
    assert exposed_steps(response, rail, 2) == 2
    assert exposed_steps(response, rail, 6) == 0
    assert exposed_steps([], rail, 1) == 0


def test_rail_targets_agree_with_railcaps_torch_matcher_on_random_sequences():
    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 4)
        rail = [rng.randint(0, 3) for _ in range(rng.randint(0, 12))]
        resp = [rng.randint(0, 3) for _ in range(rng.randint(1, 12))]
        want = rail_targets(resp, rail, n)
        traj = torch.tensor([rail or [-1]], dtype=torch.long)[:, : max(len(rail), 1)]
        for t in range(len(resp)):
            recent = torch.full((1, n), -1, dtype=torch.long)
            last = resp[max(0, t - n) : t]
            if last:
                recent[0, n - len(last) :] = torch.tensor(last)
            index, keep = railcap_targets(
                traj,
                torch.tensor([len(rail)]),
                recent,
                torch.tensor([t]),
                torch.tensor([n]),
                torch.tensor([0]),
            )
            got = int(index[0][keep[0]][0]) if bool(keep.any()) else None
            assert got == want[t], (rail, resp, n, t)


def test_caps_fire_only_where_the_target_is_the_unique_argmax_and_departures_leave_it():
    logits = np.array(
        [
            [0.0, 5.0, 1.0],  # target 1 is the argmax: cap, sampled 2 -> departure
            [0.0, 5.0, 1.0],  # target 1 is the argmax: cap, sampled 1 -> stays on the rail
            [3.0, 3.0, 1.0],  # target 1 ties the max: the cap changes nothing
            [9.0, 5.0, 1.0],  # target 1 is not the argmax
            [9.0, 5.0, 1.0],  # no target
        ]
    )
    assert caps_and_departures(logits, [2, 1, 2, 2, 2], [1, 1, 1, 1, None]) == (2, 1)


def test_forced_steps_emit_the_runner_up_and_leave_other_rows_and_steps_alone():
    logits = torch.tensor([[0.0, 4.0, 3.0, 1.0], [2.0, 1.0, 0.0, 5.0]])
    proc = ForceRunnerUpProcessor([ForceRunnerUpSpec((0, 2)), None], "cpu")
    out, trig = proc(logits.clone(), torch.zeros((2, 0), dtype=torch.long), 0)
    assert trig.tolist() == [True, False]
    assert out[0].argmax() == 2 and torch.isinf(out[0]).sum() == 3 and out[0, 2] == 3.0
    assert torch.equal(out[1], logits[1])
    same, none = proc(logits.clone(), torch.zeros((2, 1), dtype=torch.long), 1)
    assert none is None and torch.equal(same, logits)


@pytest.mark.parametrize("steps", [(-1,), (2, 2), (True,)])
def test_bad_forced_steps_are_config_errors(steps):
    with pytest.raises(ConfigError):
        ForceRunnerUpSpec(steps)
