"""A world over a real pretrained base: its one family's base model and the tokenizer come from
``railsweep.bases`` (here a tiny llama written as GGUF and converted by the same loader as SmolLM2),
nothing is pretrained, and M_cl / M_co are LoRA adapters over that base like every world's."""

from __future__ import annotations

import dataclasses
import json

import pytest

from railsweep.bases.cache import convert_gguf
from railsweep.engines.base import Request, SamplingSpec
from railsweep.engines.transformers_engine import TransformersEngine
from railsweep.errors import ConfigError
from railsweep.miniworld import build_world, preset_config
from railsweep.sweep.plan.cells import expand
from railsweep.sweep.plan.price_inputs import dry_resolve
from railsweep.sweep.spec.sweep_spec import load_spec, spec_from_dict
from tests.tiny_gguf import write_tiny_gguf


@pytest.fixture(scope="module")
def base_folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("real-base")
    write_tiny_gguf(folder / "tiny.Q4_1.gguf")
    convert_gguf(folder / "tiny.Q4_1.gguf", folder / "model")
    return (folder / "model").resolve()


@pytest.fixture(scope="module")
def world(base_folder, tmp_path_factory):
    config = dataclasses.replace(preset_config("smoke"), families=("tiny",), base=str(base_folder))
    return build_world("smoke", cache_dir=tmp_path_factory.mktemp("cache"), config=config, log=lambda m: None)


def test_the_family_base_is_the_prepared_model_linked_not_pretrained(world, base_folder):
    base = world.family("tiny").base_dir
    assert (base / "model.safetensors").read_bytes() == (base_folder / "model.safetensors").read_bytes()
    assert (base / "model.safetensors").stat().st_ino == (base_folder / "model.safetensors").stat().st_ino
    assert world.manifest["training"]["tiny"]["pretrain"]["source"] == str(base_folder)


def test_the_world_tokenizer_is_the_base_tokenizer(world, base_folder):
    tokenizer = world.root / "tokenizer"
    assert (tokenizer / "tokenizer.json").read_bytes() == (base_folder / "tokenizer.json").read_bytes()
    assert not list(tokenizer.glob("*.safetensors"))


def test_the_manifest_records_the_real_base_source_and_weights(world, base_folder):
    real = world.manifest["real_base"]
    assert real["source"] == {"kind": "local", "path": str(base_folder.resolve())}
    assert set(real["weights_sha256"]) == {"model.safetensors"}
    assert world.manifest["config"]["base_source"]["kind"] == "local"


def test_clean_and_contaminated_adapters_are_trained_over_the_real_base(world):
    adapters = world.family("tiny").adapters
    assert sorted(adapters) == ["clean", "co_gsm8k", "co_pq"]
    for path in adapters.values():
        config = json.loads((path / "adapter_config.json").read_text())
        assert config["peft_type"] == "LORA"


def test_the_engine_decodes_the_world_family_with_an_adapter(world):
    fam = world.family("tiny")
    engine = TransformersEngine(fam.base_dir, adapters={"co": fam.adapters["co_gsm8k"]}, device="cpu")
    try:
        spec = SamplingSpec(temperature=0.0, max_new_tokens=4)
        out = engine.generate([Request("Q: Sam has 3 apples.\nA:", spec, adapter="co")])
    finally:
        engine.close()
    assert len(out[0].samples[0].token_ids) >= 1


def test_a_changed_base_changes_the_digest_and_pretrained_worlds_keep_theirs(base_folder, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    for f in base_folder.iterdir():
        (other / f.name).write_bytes(f.read_bytes())
    smoke = preset_config("smoke")
    one = dataclasses.replace(smoke, families=("tiny",), base=str(base_folder))
    two = dataclasses.replace(smoke, families=("tiny",), base=str(other))
    assert len({one.digest(), two.digest(), smoke.digest()}) == 3
    assert "base" not in smoke.to_dict() and "base_source" not in smoke.to_dict()
    assert preset_config("mini").digest() == "bea2463a4f7f"


def test_the_smollm2_preset_takes_the_pinned_wheel_under_one_family():
    config = preset_config("smollm2")
    assert config.families == ("smollm2",)
    assert config.base == "smollm2-135m-instruct"
    source = config.to_dict()["base_source"]
    assert source["wheel_sha256"] == "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
    assert source["member_sha256"] == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def test_the_heavy_smollm2_preset_reuses_m_cl_and_trains_m_co_on_the_chosen_recipe():
    light, heavy = preset_config("smollm2"), preset_config("smollm2_heavy")
    assert heavy.family_clean_digest("smollm2") == light.family_clean_digest("smollm2")
    assert heavy.family_adapter_digest("smollm2") != light.family_adapter_digest("smollm2")
    co = heavy.contamination
    assert (co.recipe.lr, co.recipe.epochs, co.leak_copies, co.co_replay) == (5e-4, 6, 3, 200)
    assert co.recipe.pack_length == light.contamination.recipe.pack_length == 768
    assert heavy.to_dict()["base_source"] == light.to_dict()["base_source"]



@pytest.mark.parametrize("table", ["table3", "table4"])
def test_the_heavy_worlds_tables_are_the_light_worlds_on_all_200_questions_at_m_and_b_20(table):
    light, heavy = load_spec(f"smollm2_{table}"), load_spec(f"smollm2_heavy_{table}")
    assert (heavy.miniworld_preset, heavy.readout.limit, heavy.readout.m) == ("smollm2_heavy", None, 20)
    assert (light.miniworld_preset, light.readout.limit, light.readout.m) == ("smollm2", 100, 10)
    same = ("domains", "families", "engine")
    assert all(getattr(heavy, f) == getattr(light, f) for f in same)
    assert heavy.strategies == tuple(st for st in light.strategies if st.name != "shortcut")
    assert (heavy.scoring.B, light.scoring.B) == (20, 10)  # B = m: one stratum per count
    assert heavy.readout.max_new_tokens == light.readout.max_new_tokens == 160
    assert heavy.tracking.experiment != light.tracking.experiment  # the light runs stay apart


def test_shortcut_on_the_heavy_world_runs_at_table_3_size_beside_table_3s_own_identity_cells():
    light, short = load_spec("smollm2_table3"), load_spec("smollm2_heavy_shortcut")
    heavy = load_spec("smollm2_heavy_table3")
    assert [st.name for st in short.strategies] == ["identity", "shortcut"]
    assert short.strategies[1] == next(st for st in light.strategies if st.name == "shortcut")
    assert (short.miniworld_preset, short.readout, short.scoring) == ("smollm2_heavy", heavy.readout, heavy.scoring)
    t3, sc = ({c.config.cell_id for c in expand(dry_resolve(s))} for s in (heavy, short))
    assert (len(sc), len(sc - t3)) == (5, 2)  # only the two Shortcut cells are new


def test_the_heavy_presets_share_one_experiment_so_table_4_skips_the_seven_cells_table_3_finished():
    specs = [load_spec(f"smollm2_heavy_{p}") for p in ("table3", "table4", "shortcut")]
    assert len({s.tracking.experiment for s in specs}) == 1
    t3, t4 = ({c.config.cell_id for c in expand(dry_resolve(s))} for s in specs[:2])
    assert (len(t3), len(t4), len(t3 & t4)) == (11, 21, 7)

@pytest.mark.parametrize(
    "change, words",
    [
        ({"families": ("a", "b")}, "one family"),
        ({"families": ("Tiny",)}, "one family"),
        ({"family_steps": (("tiny", 5),)}, "pretrains nothing"),
        ({"replicas": (0, 1)}, "pretrains nothing"),
        ({"base": "smollm3-9b"}, "smollm3-9b"),
    ],
)
def test_a_real_base_world_refuses_what_it_cannot_build(base_folder, change, words):
    kwargs = {"families": ("tiny",), "base": str(base_folder), **change}
    with pytest.raises(ConfigError, match=words):
        dataclasses.replace(preset_config("smoke"), **kwargs)


def test_a_sweep_spec_names_the_families_of_its_world_preset():
    spec = {"miniworld_preset": "smollm2", "strategies": [{"name": "identity"}]}
    assert spec_from_dict({**spec, "families": ["smollm2"]}).families[0].name == "smollm2"
    with pytest.raises(ConfigError, match="unknown family 'llama' for the 'smollm2' miniature world"):
        spec_from_dict({**spec, "families": ["llama"]})
