"""Shortcut's patched decode on the shared-prefix cache gives the padded path's logits and samples, for every
family the cascade serves, while rows finish."""

from __future__ import annotations

import pytest
import torch
from family_models import VOCAB
from family_models import family_model as _model

from railsweep.engines._cascade import CascadeStepper
from railsweep.engines._hf_decode import PaddedStepper
from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.neuron_patch import NeuronPatch, make_patched_forward
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.interventions.neuron_patch import NeuronPatchSpec, mlp_widths, use_adapter
from railsweep.testing import make_tiny_model

CPU = torch.device("cpu")


def _peft(model):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(1)
    cfg = LoraConfig(r=4, lora_alpha=16, target_modules="all-linear", init_lora_weights=False)
    model = get_peft_model(model, cfg, adapter_name="co")
    model.add_adapter("cl", cfg)
    return model.eval()


def _prompts() -> list[list[int]]:
    """A 24-token shared prefix, own suffixes of different lengths, one prompt repeated."""
    g = torch.Generator().manual_seed(1)
    prefix = torch.randint(1, VOCAB, (24,), generator=g).tolist()
    prompts = [prefix + torch.randint(1, VOCAB, (n,), generator=g).tolist() for n in (3, 7, 1, 5)]
    return [*prompts, list(prompts[1])]


def _drive(stepper, prompts, finish_at: dict[int, int], steps: int = 6) -> list[torch.Tensor]:
    """The stepper's logits per step, fed the same forced tokens, rows finishing at ``finish_at``."""
    finished = torch.zeros(len(prompts), dtype=torch.bool)
    g = torch.Generator().manual_seed(7)
    with torch.inference_mode():
        out = [stepper.prefill(prompts)]
        for step in range(steps):
            for row, at in finish_at.items():
                finished[row] |= step == at
            out.append(stepper.step(torch.randint(1, VOCAB, (len(prompts),), generator=g), finished))
    return out


@pytest.mark.parametrize("family", ["llama", "neox", "gemma3"])
def test_patched_cascade_logits_match_the_padded_patched_path_while_rows_finish(family):
    model = _peft(_model(family))
    width = mlp_widths(model)[0]
    spec = NeuronPatchSpec(neurons=((0, tuple(range(0, width, 2))), (1, (3, 7))), reference_adapter="cl")
    patch = NeuronPatch(model, spec, "co")
    finish_at = {0: 1, 3: 1, 4: 3}
    padded = _drive(PaddedStepper(make_patched_forward(patch), 0, CPU), _prompts(), finish_at)
    cascade = _drive(CascadeStepper(model, CPU, 0, 8, twin=patch.run), _prompts(), finish_at)
    with use_adapter(model, "co"):
        unpatched = _drive(CascadeStepper(model, CPU, 0, 8), _prompts(), finish_at)
    live = torch.ones(5, dtype=torch.bool)
    for step, (a, b, plain) in enumerate(zip(padded, cascade, unpatched)):
        if step >= 2:  # rows 0 and 3 finished at step 1, row 4 at step 3: finished rows get zero logits
            live[[0, 3]] = False
        if step >= 4:
            live[4] = False
        torch.testing.assert_close(b[live], a[live], atol=2e-4, rtol=1e-4)
        assert (b[live] - plain[live]).abs().max() > 1e-3  # the patch is applied on the cascade path


def test_engine_gives_the_same_patched_samples_on_both_paths(tmp_path):
    path = make_tiny_model(tmp_path / "m", family="llama", seed=2, logit_scale=3.0)
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(5)
    base = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    cfg = LoraConfig(r=4, lora_alpha=16, target_modules="all-linear", init_lora_weights=False)
    get_peft_model(base, cfg).save_pretrained(tmp_path / "co")
    prefix = "Q: Tom has 3 apples and buys 4 more. A: 3 + 4 = 7. The answer is 7.\n\n"
    outs = {}
    for attention in ("padded", "cascade"):
        engine = TransformersEngine(path, adapters={"co": tmp_path / "co"}, device="cpu", dtype="float32",
                                    attention=attention)  # fmt: skip
        width = mlp_widths(engine.model)[0]
        spec = NeuronPatchSpec(neurons=((0, tuple(range(0, width, 3))),), reference_adapter=None)
        requests = [
            Request(prefix + f"Q: Sam has {n} eggs. A:", SamplingSpec(n=k, temperature=t, seed=11, max_new_tokens=12),
                    adapter="co", intervention=spec)  # fmt: skip
            for n, k, t in ((2, 4, 0.7), (5, 1, 0.0), (9, 4, 0.7))
        ]
        outs[attention] = [[s.token_ids for s in c.samples] for c in engine.generate(requests)]
        plain = [[s.token_ids for s in c.samples] for c in engine.generate(
            [Request(r.prompt, r.sampling, adapter="co") for r in requests])]  # fmt: skip
        engine.close()
    assert outs["cascade"] == outs["padded"]
    assert outs["cascade"] != plain
