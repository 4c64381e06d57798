"""Loss and Min-k% against a direct, unbatched forward pass of a real tiny model and a LoRA adapter."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from railsweep.detection.base import DetectInputs, Item
from railsweep.detection.loss import Loss, matched_control
from railsweep.detection.mink import MinK, MinKConfig, min_k_score
from railsweep.detection.nll import teacher_forcer
from railsweep.errors import ConfigError

ITEMS = [
    Item(0, "test", "Tom has 3 apples . He buys 2 more .", "3 + 2 = 5\n#### 5"),
    Item(1, "test", "Ann has 10 books .", "She keeps them all\n#### 10"),
    Item(0, "control", "Sam has 4 pens and 6 cars and gives 2 pens away to Ann .", "4 - 2 = 2\n#### 2"),
]


@pytest.fixture(scope="module")
def adapter_dir(tiny_model_dir, tmp_path_factory):
    """A LoRA adapter with random (non-zero) weights on the tiny model."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1)
    base = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    cfg = LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False)
    model = get_peft_model(base, cfg)
    out = tmp_path_factory.mktemp("adapter") / "lora"
    model.save_pretrained(out)
    return out


def direct_logprobs(model_dir, adapter, text):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    if adapter is not None:
        model = PeftModel.from_pretrained(model, str(adapter)).eval()
    ids = torch.tensor([tok(text)["input_ids"]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0]
    logp = torch.log_softmax(logits[:-1], dim=-1)
    return logp.gather(1, ids[0, 1:, None])[:, 0].double().numpy()


@pytest.mark.parametrize("use_adapter", [False, True])
def test_batched_token_logprobs_equal_a_direct_forward_pass(tiny_model_dir, adapter_dir, use_adapter):
    adapter = adapter_dir if use_adapter else None
    texts = [it.training_text() for it in ITEMS]
    got = teacher_forcer(tiny_model_dir).logprobs(texts, adapter, batch_size=2)
    for text, lp in zip(texts, got):
        np.testing.assert_allclose(lp, direct_logprobs(tiny_model_dir, adapter, text), atol=1e-5)


def test_loss_score_is_reference_nll_minus_model_nll(tiny_model_dir, adapter_dir):
    inputs = DetectInputs(model=tiny_model_dir, adapter=adapter_dir, reference_adapter=None, batch_size=3)
    (scores,) = Loss().score(ITEMS, inputs)
    for k, it in enumerate(ITEMS):
        model_nll = -direct_logprobs(tiny_model_dir, adapter_dir, it.training_text()).mean()
        ref_nll = -direct_logprobs(tiny_model_dir, None, it.training_text()).mean()
        assert scores.score[k] == pytest.approx(ref_nll - model_nll, abs=1e-5)
    assert scores.setting == "reference=base"
    assert scores.extras["matched"][2] == 0.0  # the control item is its own nearest control


def test_min_k_averages_the_lowest_k_percent_of_token_logprobs(tiny_model_dir, adapter_dir):
    inputs = DetectInputs(model=tiny_model_dir, adapter=adapter_dir)
    (scores,) = MinK(MinKConfig(k=30)).score(ITEMS, inputs)
    for k, it in enumerate(ITEMS):
        lp = direct_logprobs(tiny_model_dir, adapter_dir, it.training_text())
        lowest = sorted(lp)[: max(1, int(len(lp) * 0.3))]
        assert scores.score[k] == pytest.approx(np.mean(lowest), abs=1e-5)


def test_min_k_edge_cases():
    assert min_k_score(np.array([-1.0, -5.0, -2.0]), 1) == -5.0  # at least one token
    assert min_k_score(np.array([-1.0, -3.0]), 100) == -2.0
    assert np.isnan(min_k_score(np.array([]), 20))
    with pytest.raises(ConfigError):
        MinKConfig(k=0)


def test_matched_control_subtracts_the_nearest_control_by_length():
    score = np.array([1.0, 2.0, 0.5, 0.25])
    lengths = np.array([10, 30, 12, 28])
    got = matched_control(score, lengths, np.array([False, False, True, True]))
    np.testing.assert_allclose(got, [0.5, 1.75, 0.0, 0.0])


def test_model_side_detectors_need_a_model():
    with pytest.raises(ConfigError, match="--model"):
        Loss().score(ITEMS, DetectInputs())
