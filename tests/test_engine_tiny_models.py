"""make_tiny_model: real, loadable checkpoints of every family, usable by the engine."""

from __future__ import annotations

import pytest
from safetensors.torch import load_file

from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.errors import ConfigError
from railsweep.testing import make_tiny_model

GSM_TEXT = "Janet sells 16 - 3 - 4 = 9 duck eggs a day.\nShe makes 9 * 2 = $18 every day.\n#### 18\nThe answer is 18."


@pytest.mark.parametrize("family", ["llama", "neox", "gemma"])
def test_every_family_loads_and_decodes_through_the_engine(family, tmp_path):
    path = make_tiny_model(tmp_path / family, family=family, seed=1)
    engine = TransformersEngine(path, device="cpu", dtype="float32")
    assert engine.model.config.num_hidden_layers == 2 and engine.model.config.hidden_size == 64
    assert not list(path.glob("*.bin"))
    tok = engine.tokenizer
    enc = tok(GSM_TEXT)["input_ids"]
    assert enc[0] == tok.bos_token_id and tok.unk_token_id not in enc
    assert tok.decode(enc, skip_special_tokens=True) == GSM_TEXT
    out = engine.generate([Request("The answer is", SamplingSpec(max_new_tokens=5))])[0].samples[0]
    assert len(out.token_ids) == 5


def test_same_seed_gives_identical_weights_and_other_seed_differs(tmp_path):
    a = load_file(make_tiny_model(tmp_path / "a", seed=4) / "model.safetensors")
    b = load_file(make_tiny_model(tmp_path / "b", seed=4) / "model.safetensors")
    c = load_file(make_tiny_model(tmp_path / "c", seed=5) / "model.safetensors")
    assert all((a[k] == b[k]).all() for k in a)
    assert any((a[k] != c[k]).any() for k in a)


def test_extra_vocabulary_words_are_single_tokens(tmp_path):
    path = make_tiny_model(tmp_path / "m", vocab_words=["zebra"])
    engine = TransformersEngine(path, device="cpu")
    assert len(engine.tokenizer(" zebra", add_special_tokens=False)["input_ids"]) == 1


def test_unknown_family_and_non_empty_target_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="'gpt2'"):
        make_tiny_model(tmp_path / "x", family="gpt2")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("do not overwrite")
    with pytest.raises(ConfigError, match="not empty"):
        make_tiny_model(tmp_path / "full")
    assert (tmp_path / "full" / "keep.txt").read_text() == "do not overwrite"
