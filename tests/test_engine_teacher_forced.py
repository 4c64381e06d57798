"""Teacher-forced logits with the prompt's keys and values shared by many continuations
(:func:`railsweep.engines.hf_compat.teacher_forced`) equal one full forward pass per continuation,
on every supported family, a sliding window shorter than the sequence included."""

from __future__ import annotations

import random

import pytest
import torch
from family_models import VOCAB
from family_models import family_model as _model

from railsweep.engines.hf_compat import prompt_cache, teacher_forced


@pytest.mark.parametrize(
    "family, extra",
    [("llama", {}), ("neox", {}), ("gemma3", {}), ("gemma3", {"sliding_window": 8})],
    ids=["llama", "neox", "gemma3", "gemma3-window-8"],
)
def test_shared_prompt_logits_equal_a_full_forward_per_continuation(family, extra):
    model = _model(family, **extra)
    rng = random.Random(0)
    prompt = [rng.randrange(1, VOCAB) for _ in range(21)]
    conts = [[rng.randrange(1, VOCAB) for _ in range(n)] for n in (6, 0, 1, 13, 2)]
    with torch.no_grad():
        first, cache = prompt_cache(model, prompt)
        got = teacher_forced(model, first, cache, conts[:3]) + teacher_forced(model, first, cache, conts[3:])
        for c, g in zip(conts, got):
            want = model(input_ids=torch.tensor([prompt + c])).logits[
                0, len(prompt) - 1 : len(prompt) - 1 + len(c)
            ]
            assert g.shape == (len(c), VOCAB)
            torch.testing.assert_close(g, want.float(), rtol=1e-5, atol=1e-5)


def test_continuations_of_one_token_take_the_prompts_last_logits():
    model = _model("llama")
    with torch.no_grad():
        got = teacher_forced(model, *prompt_cache(model, [3, 4, 5]), [[7], [], [9]])
        want = model(input_ids=torch.tensor([[3, 4, 5]])).logits[0, -1]
    assert [tuple(g.shape) for g in got] == [(1, VOCAB), (0, VOCAB), (1, VOCAB)]
    torch.testing.assert_close(got[0][0], want)
    torch.testing.assert_close(got[2][0], want)
