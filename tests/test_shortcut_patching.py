"""Neuron patching on real tiny models of every supported layout (Llama, GPT-NeoX, Gemma), with peft LoRA."""

from __future__ import annotations

import pytest
import torch

from railsweep.engines.neuron_patch import NeuronPatch, make_patched_forward
from railsweep.errors import ConfigError
from railsweep.interventions.neuron_patch import (
    NeuronPatchSpec,
    capture_down_inputs,
    down_projections,
    mlp_widths,
    use_adapter,
)
from railsweep.testing import make_tiny_model

PROMPTS = ["Q: Janet has 3 apples and buys 4 more. How many apples?\nA:", "Q: What is 2 plus 5?\nA:"]


def _peft_model(path, adapters=("co", "cl")):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(1)
    base = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    cfg = LoraConfig(r=8, lora_alpha=32, target_modules="all-linear", init_lora_weights=False)
    model = get_peft_model(base, cfg, adapter_name=adapters[0])
    for name in adapters[1:]:
        model.add_adapter(name, cfg)
    model.eval()
    return model


@pytest.fixture(scope="module", params=["llama", "neox", "gemma"])
def family_model(request, tmp_path_factory):
    path = make_tiny_model(tmp_path_factory.mktemp(request.param) / "m", family=request.param, seed=3)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"
    return _peft_model(path), tok


def _greedy(forward, tok, steps=6):
    """A minimal left-padded KV-cached greedy loop; returns (tokens[B,steps], logits per step)."""
    enc = tok(PROMPTS, return_tensors="pt", padding=True)
    ids, mask = enc["input_ids"], enc["attention_mask"]
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    cache, toks, all_logits = None, [], []
    with torch.no_grad():
        for _ in range(steps):
            logits, cache = forward(ids, mask, pos, cache)
            nxt = logits.argmax(-1, keepdim=True)
            toks.append(nxt)
            all_logits.append(logits)
            ids = nxt
            mask = torch.cat([mask, torch.ones_like(nxt)], dim=1)
            pos = pos[:, -1:] + 1
    return torch.cat(toks, 1), all_logits


def _plain_forward(model, adapter):
    def forward(ids, mask, pos, cache):
        with use_adapter(model, adapter):
            out = model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=pos,
                cache=cache,
                use_cache=True,
                logits_to_keep=1,
            )
        return out.logits[:, -1, :], out.cache

    return forward


def _all_neurons(model):
    return tuple((layer, tuple(range(w))) for layer, w in enumerate(mlp_widths(model)))


def test_every_layout_exposes_one_down_projection_per_layer(family_model):
    model, _ = family_model
    assert len(down_projections(model)) == 2
    assert mlp_widths(model) == [128, 128]


def test_no_neurons_reproduces_the_unpatched_model_exactly(family_model):
    model, tok = family_model
    toks_ref, logits_ref = _greedy(_plain_forward(model, "co"), tok)
    toks, logits = _greedy(make_patched_forward(NeuronPatch(model, NeuronPatchSpec(neurons=()), "co")), tok)
    assert torch.equal(toks, toks_ref)
    for a, b in zip(logits, logits_ref):
        assert torch.equal(a, b)


def test_patching_every_neuron_makes_target_down_inputs_equal_the_references(family_model):
    model, tok = family_model
    spec = NeuronPatchSpec(neurons=_all_neurons(model), reference_adapter=None)
    with capture_down_inputs(model) as store:
        _greedy(make_patched_forward(NeuronPatch(model, spec, "co")), tok, steps=4)
    for layer in range(2):
        seen = store[layer]  # per forward: reference, target, reference, target, ...
        assert len(seen) == 8
        for ref, tgt in zip(seen[0::2], seen[1::2]):
            assert torch.equal(ref, tgt)
    # and the unpatched target's inputs are not the base's in the second layer (the LoRA matters)
    with capture_down_inputs(model) as plain:
        _greedy(_plain_forward(model, None), tok, steps=1)
        _greedy(_plain_forward(model, "co"), tok, steps=1)
    assert not torch.allclose(plain[1][0], plain[1][1])


def test_patched_and_unpatched_runs_differ_for_a_partial_neuron_set(family_model):
    model, tok = family_model
    spec = NeuronPatchSpec(neurons=((0, tuple(range(0, 128, 2))),), reference_adapter="cl")
    _, plain = _greedy(_plain_forward(model, "co"), tok, steps=1)
    _, patched = _greedy(make_patched_forward(NeuronPatch(model, spec, "co")), tok, steps=1)
    assert (plain[0] - patched[0]).abs().max() > 1e-3


def test_patching_restores_the_previously_active_adapter(family_model):
    model, tok = family_model
    model.set_adapter("co")
    spec = NeuronPatchSpec(neurons=((0, (1, 2)),), reference_adapter="cl")
    _greedy(make_patched_forward(NeuronPatch(model, spec, "co")), tok, steps=2)
    assert model.active_adapter == "co"


def test_out_of_range_neuron_is_rejected_with_its_value(family_model):
    model, _ = family_model
    with pytest.raises(ConfigError, match="d_mlp=128"):
        make_patched_forward(NeuronPatch(model, NeuronPatchSpec(neurons=((0, (128,)),)), "co"))
    with pytest.raises(ConfigError, match="layer 5"):
        make_patched_forward(NeuronPatch(model, NeuronPatchSpec(neurons=((5, (0,)),)), "co"))


def test_deduplicated_prefill_gives_the_same_patched_samples(family_model, tmp_path):
    """PatchCache can be row-expanded, so the engine may prefill a prompt once for all its samples."""
    from railsweep.engines._hf_decode import Row, StopTable, decode_batch

    model, tok = family_model
    spec = NeuronPatchSpec(neurons=((0, tuple(range(0, 128, 3))), (1, (5, 9))), reference_adapter="cl")
    prompts = [tok(p)["input_ids"] for p in PROMPTS]
    rows = [
        Row(
            list(prompts[i % 2]),
            seed=7,
            sample_idx=i,
            temperature=0.7,
            max_new_tokens=6,
            stop=(),
            return_entropy=False,
        )
        for i in range(6)
    ]
    vocab = model.get_output_embeddings().weight.shape[0]
    common = dict(
        tokenizer=tok,
        stop_table=StopTable(tok, vocab, torch.device("cpu")),
        eos_ids=[tok.eos_token_id],
        pad_id=tok.pad_token_id,
        device=torch.device("cpu"),
    )
    with torch.no_grad():
        plain = decode_batch(
            rows, make_patched_forward(NeuronPatch(model, spec, "co")), None, dedupe_prefill=False, **common
        )
        dedup = decode_batch(
            rows, make_patched_forward(NeuronPatch(model, spec, "co")), None, dedupe_prefill=True, **common
        )
    assert [s.token_ids for s in plain] == [s.token_ids for s in dedup]
