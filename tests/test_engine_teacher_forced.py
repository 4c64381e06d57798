"""Teacher-forced logits with the prompt's keys and values shared by many continuations
(:func:`railsweep.engines.teacher_forcing.teacher_forced`) equal one full forward pass per continuation,
on every supported family, a sliding window shorter than the sequence included."""

from __future__ import annotations

import random

import pytest
import torch
from family_models import VOCAB
from family_models import family_model as _model

from railsweep.engines.teacher_forcing import prompt_cache, teacher_forced


def _in_order(model, conts, prompt):
    got = dict(teacher_forced(model, conts, prompt=prompt))
    return [got[i] for i in range(len(conts))]


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
        state = prompt_cache(model, prompt)
        got = _in_order(model, conts[:3], state) + _in_order(model, conts[3:], state)
        for c, g in zip(conts, got):
            want = model(input_ids=torch.tensor([prompt + c])).logits[
                0, len(prompt) - 1 : len(prompt) - 1 + len(c)
            ]
            assert g.shape == (len(c), VOCAB)
            torch.testing.assert_close(g, want.float(), rtol=1e-5, atol=1e-5)


def test_continuations_of_one_token_take_the_prompts_last_logits():
    model = _model("llama")
    with torch.no_grad():
        got = _in_order(model, [[7], [], [9]], prompt_cache(model, [3, 4, 5]))
        want = model(input_ids=torch.tensor([[3, 4, 5]])).logits[0, -1]
    assert [tuple(g.shape) for g in got] == [(1, VOCAB), (0, VOCAB), (1, VOCAB)]
    torch.testing.assert_close(got[0][0], want)
    torch.testing.assert_close(got[2][0], want)


@pytest.fixture(scope="module")
def forcer_and_adapter(tiny_model_dir, tmp_path_factory):
    """The shared TeacherForcer of the tiny model, with a LoRA adapter of random (non-zero) weights."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from railsweep.detection.nll import TeacherForcer

    torch.manual_seed(2)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    cfg = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False)
    adapter = tmp_path_factory.mktemp("adapter") / "lora"
    get_peft_model(base, cfg).save_pretrained(adapter)
    forcer = TeacherForcer(tiny_model_dir)
    forcer.logprobs(["Tom"], adapter)  # loads the adapter: the model is a peft model from here on
    return forcer, adapter


@pytest.mark.parametrize("use_adapter", [False, True])
def test_the_detectors_and_figure_1_read_one_teacher_forcing(forcer_and_adapter, use_adapter):
    """The detectors' token log-probabilities (TeacherForcer) and Figure 1's shared-prompt logits
    (step_logits_many) are :func:`teacher_forced`'s own values, and the two ways agree on one text."""
    from types import SimpleNamespace

    import numpy as np

    from railsweep.diagnostics.figure1 import step_logits_many

    forcer, adapter = forcer_and_adapter
    adapter = adapter if use_adapter else None
    texts = ["Tom has 3 apples . He buys 2 more .", "Ann has 10 books . She keeps them all ."]
    ids = [forcer.tokenizer(t)["input_ids"] for t in texts]
    prompt = "Tom has 3 apples ."
    k = len(forcer.tokenizer(prompt)["input_ids"])
    assert ids[0][:k] == forcer.tokenizer(prompt)["input_ids"] and len(ids[0]) > k + 2
    conts = [ids[0][k:], ids[1][k:]]
    lps = forcer.logprobs(texts, adapter, batch_size=2)
    with torch.no_grad(), forcer.using(adapter):
        whole = dict(teacher_forced(forcer.model, ids, batch_size=2))
        state = prompt_cache(forcer.model, ids[0][:k])
        shared = dict(teacher_forced(forcer.model, conts, prompt=state, batch_size=2))
    for lp, i in zip(lps, (0, 1)):
        want = torch.log_softmax(whole[i], dim=-1).gather(1, torch.tensor(ids[i][1:])[:, None])[:, 0]
        assert np.array_equal(lp, want.double().numpy())
    name = None if adapter is None else forcer._adapters[str(adapter.resolve())]
    engine = SimpleNamespace(model=forcer.model, tokenizer=forcer.tokenizer)
    figure = list(step_logits_many(engine, name, prompt, conts, batch_size=2))
    assert all(torch.equal(figure[j], shared[j]) for j in (0, 1))
    torch.testing.assert_close(figure[0], whole[0][k - 1 :], rtol=0, atol=1e-5)
