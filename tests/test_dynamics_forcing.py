"""Per-position teacher forcing on a real tiny model: NLL, logit gaps and NLL at tau against direct passes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from railsweep.detection.nll import TeacherForcer
from railsweep.dynamics.forcing import continuation_ids, position_stats

PROMPTS = ["Q: Janet has 3 apples.\nA:", "Q: There are 9 cars and 4 more arrive. How many cars?\nA:"]
CONTS = [" She has 3 apples. The answer is 3.", " 9 + 4 = 13. The answer is 13."]


@pytest.fixture(scope="module")
def forced(tiny_model_dir, tmp_path_factory):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(3)
    m = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    cfg = LoraConfig(r=4, lora_alpha=4, target_modules="all-linear", init_lora_weights=False)
    adapter = tmp_path_factory.mktemp("lora") / "co"
    get_peft_model(m, cfg).save_pretrained(adapter)
    return TeacherForcer(tiny_model_dir), adapter


def _direct_logits(forcer, adapter, ids):
    with torch.no_grad(), forcer.using(adapter):
        return forcer.model(input_ids=torch.tensor([ids])).logits[0].double()


@pytest.mark.parametrize("use_adapter", [False, True])
def test_nll_gap_and_margin_by_position_match_a_direct_forward_pass(forced, use_adapter):
    forcer, adapter = forced
    adapter = adapter if use_adapter else None
    pairs = [continuation_ids(forcer.tokenizer, p, c) for p, c in zip(PROMPTS, CONTS)]
    stats = position_stats(forcer, adapter, [p for p, _ in pairs], [c for _, c in pairs], (0.0, 0.5, 1.0), 1)
    batched = position_stats(
        forcer, adapter, [p for p, _ in pairs], [c for _, c in pairs], (0.0, 0.5, 1.0), 2
    )
    for (p, c), s, b in zip(pairs, stats, batched):
        z = _direct_logits(forcer, adapter, p + c)[len(p) - 1 : len(p) - 1 + len(c)]
        logp = torch.log_softmax(z, dim=1)
        want = np.array([-logp[k, tok].item() for k, tok in enumerate(c)])
        assert s.nll == pytest.approx(want, abs=1e-6) and b.nll == pytest.approx(want, abs=1e-5)
        top = torch.sort(z, dim=1, descending=True).values
        assert s.gap == pytest.approx((top[:, 0] - top[:, 1]).numpy(), abs=1e-6)
        best_other = [max(v for j, v in enumerate(z[k].tolist()) if j != tok) for k, tok in enumerate(c)]
        assert s.margin == pytest.approx(np.array([z[k, tok].item() for k, tok in enumerate(c)]) - best_other)
        assert s.nll_tau[1.0] == pytest.approx(s.nll)
        half = torch.log_softmax(z / 0.5, dim=1)
        assert s.nll_tau[0.5] == pytest.approx(np.array([-half[k, tok].item() for k, tok in enumerate(c)]))
        assert np.array_equal(s.nll_tau[0.0] == 0, s.margin > 0) and set(s.nll_tau[0.0]) <= {0.0, np.inf}


def test_nll_by_position_equals_the_shared_teacher_forcers_token_logprobs(forced):
    forcer, adapter = forced
    pairs = [continuation_ids(forcer.tokenizer, p, c) for p, c in zip(PROMPTS, CONTS)]
    stats = position_stats(forcer, adapter, [p for p, _ in pairs], [c for _, c in pairs])
    full = forcer.logprobs([p + c for p, c in zip(PROMPTS, CONTS)], adapter=adapter)
    for (_, c), s, lp in zip(pairs, stats, full):
        assert s.nll == pytest.approx(-lp[-len(c) :], abs=1e-5)


def test_continuation_ids_split_the_joint_tokenisation(forced):
    tok = forced[0].tokenizer
    p, c = continuation_ids(tok, PROMPTS[0], CONTS[0])
    assert p + c == tok(PROMPTS[0] + CONTS[0])["input_ids"] and len(c) > 3
