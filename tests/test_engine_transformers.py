"""TransformersEngine on a real tiny llama (and a real peft LoRA), no mocks."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from railsweep.engines.base import Engine, Request, SamplingSpec
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.errors import ConfigError, DataError
from railsweep.interventions import NeuronPatchSpec, RailCapSpec

PROMPTS = [
    "Question: Janet sells 16 eggs every day.\nAnswer:",
    "The answer is",
    "Question: A robe takes 2 bolts of blue fiber and half that much white fiber. How many bolts in total?\nAnswer:",
]


def greedy(prompt: str, max_new: int = 24, **kw) -> Request:
    return Request(prompt, SamplingSpec(max_new_tokens=max_new), **kw)


def sampled(prompt: str, seed: int, n: int = 4, max_new: int = 16, **kw) -> Request:
    return Request(prompt, SamplingSpec(n=n, temperature=0.8, max_new_tokens=max_new, seed=seed), **kw)


def ids(completion) -> list[list[int]]:
    return [s.token_ids for s in completion.samples]


@pytest.fixture(scope="module")
def lora_dir(tiny_model_dir, tmp_path_factory):
    """A peft LoRA with random, non-zero A and B on the tiny llama."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(11)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32)
    cfg = LoraConfig(
        r=4, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False
    )
    out = tmp_path_factory.mktemp("lora") / "co"
    get_peft_model(model, cfg).save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def engine(tiny_model_dir, lora_dir):
    eng = TransformersEngine(tiny_model_dir, adapters={"co": lora_dir}, device="cpu", dtype="float32")
    yield eng
    eng.close()


def test_engine_satisfies_the_protocol_and_lists_its_adapters(engine):
    assert isinstance(engine, Engine)
    assert engine.adapters() == ["co"]
    assert engine.supports(RailCapSpec) and engine.supports(NeuronPatchSpec) and not engine.supports(int)


def test_greedy_is_deterministic_and_runs_to_max_new_tokens(engine):
    a = engine.generate([greedy(p) for p in PROMPTS])
    b = engine.generate([greedy(p) for p in PROMPTS])
    assert [ids(c) for c in a] == [ids(c) for c in b]
    assert all(len(c.samples) == 1 and len(c.samples[0].token_ids) == 24 for c in a)
    assert {c.samples[0].finish_reason for c in a} == {"length"}


def test_left_padded_batch_gives_the_same_greedy_output_as_each_prompt_alone(engine):
    together = engine.generate([greedy(p) for p in PROMPTS])
    for p, c in zip(PROMPTS, together):
        alone = engine.generate([greedy(p)])[0]
        assert ids(alone) == ids(c)
        assert alone.samples[0].text == c.samples[0].text


def test_same_seed_gives_identical_samples_across_batch_sizes_and_compositions(tiny_model_dir, engine):
    target = sampled(PROMPTS[0], seed=5)
    alone = engine.generate([target])[0]
    mixed = engine.generate([sampled(PROMPTS[2], seed=1, n=3), target, greedy(PROMPTS[1])])[1]
    small = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32", max_batch_size=3)
    chunked = small.generate([greedy(PROMPTS[1]), target])[1]
    assert ids(alone) == ids(mixed) == ids(chunked)
    assert len({tuple(x) for x in ids(alone)}) > 1  # the n samples are distinct draws


def test_different_seeds_give_different_samples(engine):
    a, b = engine.generate([sampled(PROMPTS[0], seed=5), sampled(PROMPTS[0], seed=6)])
    assert ids(a) != ids(b)


def test_stop_string_cuts_text_before_it_and_ids_after_the_token_completing_it(engine):
    full = engine.generate([greedy(PROMPTS[0], max_new=30)])[0].samples[0]
    tok = engine.tokenizer
    # a stop string spanning a token boundary, taken from the middle of the greedy text
    cut_tok = 10
    prefix = tok.decode(full.token_ids[:cut_tok], skip_special_tokens=True)
    stop = prefix[-1] + tok.decode(full.token_ids[: cut_tok + 1], skip_special_tokens=True)[len(prefix) :][:2]
    first = next(i for i in range(len(full.token_ids)) if stop in tok.decode(full.token_ids[: i + 1]))
    req = Request(PROMPTS[0], SamplingSpec(max_new_tokens=30, stop=("never happens", stop)))
    got = engine.generate([req])[0].samples[0]
    assert got.finish_reason == "stop"
    assert got.token_ids == full.token_ids[: first + 1]
    assert got.text == full.text[: full.text.index(stop)]
    assert stop not in got.text


def test_eos_ends_a_row_and_is_kept_in_token_ids(tiny_model_dir, tmp_path):
    plain = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32")
    full = plain.generate([greedy(PROMPTS[1])])[0].samples[0]
    # declare the 5th greedy token an extra EOS id, through the model's generation_config
    model_dir = tmp_path / "m"
    shutil.copytree(tiny_model_dir, model_dir)
    gc = json.loads((model_dir / "generation_config.json").read_text())
    gc["eos_token_id"] = [gc["eos_token_id"], full.token_ids[4]]
    (model_dir / "generation_config.json").write_text(json.dumps(gc))
    eng = TransformersEngine(model_dir, device="cpu", dtype="float32")
    # batched with a longer row, so the finished row must be masked, not dropped
    got, other = eng.generate([greedy(PROMPTS[1]), greedy(PROMPTS[0])])
    first_eos = full.token_ids.index(full.token_ids[4])
    assert got.samples[0].finish_reason == "stop"
    assert got.samples[0].token_ids == full.token_ids[: first_eos + 1]
    assert ids(other) == ids(eng.generate([greedy(PROMPTS[0])])[0])
    assert ids(eng.generate([greedy(PROMPTS[1])])[0]) == ids(got)


def test_lora_adapter_changes_outputs_and_no_adapter_reproduces_the_base(tiny_model_dir, engine):
    base_only = TransformersEngine(tiny_model_dir, device="cpu", dtype="float32")
    want_base = [ids(c) for c in base_only.generate([greedy(p) for p in PROMPTS])]
    # one call mixing adapters: grouped internally, returned in request order
    reqs = [greedy(p, adapter=a) for p in PROMPTS for a in (None, "co")]
    got = [ids(c) for c in engine.generate(reqs)]
    assert got[0::2] == want_base
    assert all(co != base for co, base in zip(got[1::2], want_base))
    assert got[1::2] == [ids(c) for c in engine.generate([greedy(p, adapter="co") for p in PROMPTS])]


def test_entropy_is_the_full_vocabulary_entropy_of_each_step(engine, tiny_model_dir):
    req = Request(PROMPTS[1], SamplingSpec(max_new_tokens=5, return_entropy=True))
    s = engine.generate([req])[0].samples[0]
    assert len(s.entropies) == len(s.token_ids) == 5
    model = engine.model
    prompt = engine.tokenizer(PROMPTS[1], return_tensors="pt").input_ids
    seq = torch.cat([prompt, torch.tensor([s.token_ids[:-1]])], dim=1)
    with torch.inference_mode(), model.disable_adapter():
        logp = torch.log_softmax(model(seq).logits[0, prompt.shape[1] - 1 :].float(), -1)
    want = -(logp.exp() * logp).sum(-1)
    assert torch.allclose(torch.tensor(s.entropies), want, atol=1e-4)


def test_neuron_patch_with_the_model_as_its_own_reference_changes_nothing(engine):
    from railsweep.interventions.neuron_patch import mlp_widths

    spec = NeuronPatchSpec(neurons=((0, tuple(range(mlp_widths(engine.model)[0]))),), reference_adapter="co")
    plain = engine.generate([greedy(p, adapter="co") for p in PROMPTS])
    self_patched = engine.generate([greedy(p, adapter="co", intervention=spec) for p in PROMPTS])
    base_patched = engine.generate(
        [greedy(p, adapter="co", intervention=NeuronPatchSpec(spec.neurons, None)) for p in PROMPTS]
    )
    assert [ids(c) for c in self_patched] == [ids(c) for c in plain]
    assert [ids(c) for c in base_patched] != [ids(c) for c in plain]


def test_unknown_adapter_is_a_config_error_naming_it(engine):
    with pytest.raises(ConfigError, match="'nope'"):
        engine.generate([greedy(PROMPTS[0], adapter="nope")])


def test_missing_model_or_adapter_directory_is_a_data_error_naming_the_path(tiny_model_dir, tmp_path):
    with pytest.raises(DataError, match=str(tmp_path / "absent")):
        TransformersEngine(tmp_path / "absent", device="cpu")
    with pytest.raises(DataError, match=str(tmp_path / "no_lora")):
        TransformersEngine(tiny_model_dir, adapters={"co": tmp_path / "no_lora"}, device="cpu")


def test_pickle_only_checkpoint_is_refused(tiny_model_dir, tmp_path):
    legacy = tmp_path / "legacy"
    shutil.copytree(tiny_model_dir, legacy)
    (legacy / "model.safetensors").unlink()
    (legacy / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(DataError, match="only pickle .bin"):
        TransformersEngine(legacy, device="cpu")
