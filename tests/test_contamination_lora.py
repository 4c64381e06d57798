"""The peft LoRA trainer: adapters load back into the engine, change outputs, and continue from M_cl."""

from __future__ import annotations

import json

import pytest
import torch
from peft import PeftModel
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from railsweep.contamination import LoraRecipe, train_lora
from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.errors import ConfigError, DataError

TEXTS = [
    f"Q: Janet has {a} apples and buys {b} more. How many apples does she have?\nA: {a} + {b} = {a + b}. "
    f"The answer is {a + b}."
    for a, b in [(3, 4), (10, 5), (7, 8), (20, 1), (6, 6), (9, 2), (11, 3), (4, 15)]
]
FAST = LoraRecipe(r=8, alpha=16, lr=5e-2, global_batch=4, micro_batch=2, epochs=2, max_length=64)


@pytest.fixture(scope="module")
def adapter_dir(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("lora") / "clean"
    stats = train_lora(tiny_model_dir, TEXTS, FAST, out, device="cpu")
    assert stats["steps"] == 4 and stats["warmup_steps"] == 0
    return out


def test_trained_adapter_loads_into_the_engine_and_changes_greedy_output(tiny_model_dir, adapter_dir):
    engine = TransformersEngine(tiny_model_dir, adapters={"clean": str(adapter_dir)}, device="cpu")
    spec = SamplingSpec(n=1, temperature=0.0, max_new_tokens=12)
    prompt = "Q: Janet has 3 apples and buys 4 more. How many apples does she have?\nA:"
    base, tuned = engine.generate(
        [Request(prompt, spec, adapter=None), Request(prompt, spec, adapter="clean")]
    )
    engine.close()
    assert base.samples[0].token_ids != tuned.samples[0].token_ids


def test_adapter_targets_every_linear_projection_with_the_recipe_rank(adapter_dir):
    cfg = json.loads((adapter_dir / "adapter_config.json").read_text())
    assert cfg["r"] == 8 and cfg["lora_alpha"] == 16
    weights = load_file(adapter_dir / "adapter_model.safetensors")
    targeted = {k.split(".")[-3] for k in weights if "lora_A" in k}
    assert targeted == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}


def test_continued_training_starts_from_the_clean_adapter_weights(tiny_model_dir, adapter_dir, tmp_path):
    # a vanishing learning rate leaves the continued adapter where it started: exactly M_cl's weights
    still = LoraRecipe(r=8, alpha=16, lr=1e-12, global_batch=4, micro_batch=4, epochs=1, max_length=64)
    stats = train_lora(
        tiny_model_dir, TEXTS[:4], still, tmp_path / "co", init_adapter=adapter_dir, device="cpu"
    )
    clean = load_file(adapter_dir / "adapter_model.safetensors")
    co = load_file(tmp_path / "co" / "adapter_model.safetensors")
    assert stats["continued_from"] == str(adapter_dir)
    assert clean.keys() == co.keys()
    lora_b = [k for k in clean if "lora_B" in k]
    assert any(clean[k].abs().max() > 0 for k in lora_b)  # M_cl moved away from peft's zero init
    for k in clean:
        torch.testing.assert_close(co[k], clean[k], rtol=0, atol=1e-6)


def test_uneven_global_batch_is_a_config_error():
    with pytest.raises(ConfigError, match="global_batch"):
        LoraRecipe(global_batch=30, micro_batch=8)


def test_missing_base_model_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="base model not found"):
        train_lora(tmp_path / "nope", TEXTS, FAST, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_packing_puts_every_example_once_per_epoch_into_sequences_that_fit(tiny_model_dir):
    import random

    from transformers import AutoTokenizer

    from railsweep.contamination.lora import _epoch_sequences

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    recipe = LoraRecipe(pack_length=96, epochs=3, global_batch=2, micro_batch=2)
    epochs = _epoch_sequences(tok, TEXTS, recipe, random.Random(0))
    sep = tok("\n\n", add_special_tokens=False).input_ids
    bodies = sorted(tuple(tok(t, add_special_tokens=False).input_ids) for t in TEXTS)
    assert len(epochs) == 3
    for packs in epochs:
        assert 1 < len(packs) < len(TEXTS)  # several examples share a sequence
        seen = []
        for seq in packs:
            assert len(seq) <= 96 and seq[0] == tok.bos_token_id and seq[-1] == tok.eos_token_id
            text = tok.decode(seq[1:-1])
            seen += [
                tuple(tok(part, add_special_tokens=False).input_ids) for part in text.split(tok.decode(sep))
            ]
        assert sorted(seen) == bodies
    assert epochs[0] != epochs[1]  # reshuffled each epoch


def test_unpacked_sequences_are_one_example_each_with_bos_and_eos(tiny_model_dir):
    import random

    from transformers import AutoTokenizer

    from railsweep.contamination.lora import _epoch_sequences

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    (epoch,) = _epoch_sequences(tok, TEXTS, LoraRecipe(epochs=1, max_length=64), random.Random(0))
    assert len(epoch) == len(TEXTS) and all(s[-1] == tok.eos_token_id for s in epoch)


def test_packed_training_counts_packed_sequences_as_the_global_batch(tiny_model_dir, tmp_path):
    packed = LoraRecipe(r=8, alpha=16, lr=1e-2, global_batch=2, micro_batch=1, epochs=2, pack_length=96)
    stats = train_lora(tiny_model_dir, TEXTS, packed, tmp_path / "packed", device="cpu")
    assert stats["examples"] == len(TEXTS) and 1 < stats["sequences_per_epoch"] < len(TEXTS)
    assert (tmp_path / "packed" / "adapter_model.safetensors").is_file()


def test_negative_pack_length_is_a_config_error():
    with pytest.raises(ConfigError, match="pack_length"):
        LoraRecipe(pack_length=-1)


def test_block_causal_attention_trains_the_adapter_that_native_attention_trains(tiny_model_dir, tmp_path):
    weights, stats = {}, {}
    for attention in ("native", "block_causal"):
        recipe = LoraRecipe(**{**FAST.__dict__, "attention": attention, "pack_length": 48})
        stats[attention] = train_lora(tiny_model_dir, TEXTS, recipe, tmp_path / attention, device="cpu")
        weights[attention] = load_file(tmp_path / attention / "adapter_model.safetensors")
    assert stats["native"]["attention"] == "native" and stats["block_causal"]["attention"] == "block_causal"
    assert abs(stats["native"]["final_loss"] - stats["block_causal"]["final_loss"]) < 1e-4
    for k, w in weights["native"].items():
        torch.testing.assert_close(weights["block_causal"][k], w, rtol=1e-3, atol=1e-5)


@pytest.mark.parametrize("precision, base_dtype", [("mixed", torch.float32), ("bf16", torch.bfloat16)])
def test_mixed_precision_keeps_the_base_in_fp32_where_bf16_stores_it_in_bf16(
    precision, base_dtype, tiny_model_dir, tmp_path, monkeypatch
):
    from transformers import AutoModelForCausalLM

    loaded = []
    real = AutoModelForCausalLM.from_pretrained

    def recording(*args, **kwargs):
        model = real(*args, **kwargs)
        loaded.append(next(model.parameters()).dtype)
        return model

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", recording)
    recipe = LoraRecipe(**{**FAST.__dict__, "precision": precision, "epochs": 1})
    stats = train_lora(tiny_model_dir, TEXTS, recipe, tmp_path / precision, device="cpu")
    assert stats["precision"] == precision and stats["attention"] == "block_causal"
    assert loaded == [base_dtype]
    weights = load_file(tmp_path / precision / "adapter_model.safetensors")
    assert all(w.dtype == torch.float32 for w in weights.values())  # adapters train in fp32 either way


@pytest.mark.parametrize("field, value", [("precision", "fp16"), ("attention", "flash")])
def test_unknown_precision_or_attention_is_a_config_error(field, value):
    with pytest.raises(ConfigError, match=repr(value)):
        LoraRecipe(**{field: value})


def test_a_step_hook_decodes_with_the_model_attention_and_leaves_training_unchanged(tiny_model_dir, tmp_path):
    recipe = LoraRecipe(**{**FAST.__dict__, "attention": "block_causal", "pack_length": 48})
    prompt = torch.tensor([[1, 5, 9, 13, 17]])
    seen = {}

    def hook(step, model):
        model.eval()
        with torch.no_grad():
            seen[step] = model.generate(prompt, max_new_tokens=6, do_sample=False)[0, 5:].tolist()

    train_lora(tiny_model_dir, TEXTS, recipe, tmp_path / "hooked", device="cpu", on_step=hook)
    train_lora(tiny_model_dir, TEXTS, recipe, tmp_path / "plain", device="cpu")
    hooked = load_file(tmp_path / "hooked" / "adapter_model.safetensors")
    for k, w in load_file(tmp_path / "plain" / "adapter_model.safetensors").items():
        torch.testing.assert_close(hooked[k], w)
    assert sorted(seen) == [1, 2, 3, 4]
    # the last hook decoded the trained adapter exactly as a fresh load of it decodes (KV cache, own attention)
    fresh = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), tmp_path / "plain").eval()
    with torch.no_grad():
        assert fresh.generate(prompt, max_new_tokens=6, do_sample=False)[0, 5:].tolist() == seen[4]


def test_epoch_steps_are_the_passes_train_lora_takes_so_a_hook_can_act_at_pass_ends(tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer

    from railsweep.contamination.lora import epoch_steps

    packed = LoraRecipe(r=8, alpha=16, lr=1e-2, global_batch=1, micro_batch=1, epochs=3, pack_length=80)
    per_pass = epoch_steps(AutoTokenizer.from_pretrained(tiny_model_dir), TEXTS, packed)
    steps = []
    stats = train_lora(tiny_model_dir, TEXTS, packed, tmp_path / "a", device="cpu",
                       on_step=lambda step, model: steps.append(step))  # fmt: skip
    assert len(per_pass) == 3 and stats["sequences_per_epoch"] == per_pass[0]
    assert steps == list(range(1, sum(per_pass) + 1)) and stats["steps"] == sum(per_pass)
