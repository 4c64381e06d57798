"""A shipped world: a finished build's files installed into the cache instead of trained, sha256-checked."""

from __future__ import annotations

import json
import shutil

import pytest

from railsweep.errors import DataError
from railsweep.miniworld import shipped
from railsweep.miniworld import world as miniworld_world
from railsweep.miniworld.cache import World, load_world, world_root
from railsweep.miniworld.presets import preset_config
from railsweep.miniworld.weights import combined_digest, documented_weights, file_hashes
from railsweep.provenance import file_sha256
from railsweep.sweep.run.staged import start_world


@pytest.fixture()
def packed_smoke(smoke_world, tmp_path, monkeypatch):
    """The cached smoke world packed as the package's only shipped world; returns (its folder, a new empty cache)."""
    source = world_root("smoke", smoke_world)
    folder = shipped.pack(source, tmp_path / "shipped")
    monkeypatch.setattr(shipped, "SHIPPED_DIR", tmp_path / "shipped")
    return folder, tmp_path / "cache"


def _no_training(*args, **kwargs):
    raise AssertionError("the world was trained, not installed")


def test_the_shipped_mini_world_is_the_documented_build():
    config = preset_config("mini")
    folder = shipped.shipped_folder(config)
    assert folder is not None and folder.name == f"mini-{config.digest()}"
    sums = shipped.verify(folder)
    weights = {rel: digest for rel, digest in sums.items() if rel.endswith(".safetensors")}
    assert len(weights) == 12  # 3 families x (base + clean + 2 contaminated adapters)
    assert combined_digest(weights) == documented_weights(config.digest())["weights_digest"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["weights_digest"] == combined_digest(weights) and "shipped" not in manifest


def test_packing_writes_every_file_but_the_data_and_no_absolute_path(packed_smoke, smoke_world):
    folder, _ = packed_smoke
    source = world_root("smoke", smoke_world)
    sums = shipped.read_sums(folder)
    assert not any(rel.startswith("data/") for rel in sums) and "manifest.json" in sums
    for rel in sums:
        if rel.endswith((".json", ".md")):
            assert str(source) not in (folder / rel).read_text()
    assert shipped.PLACEHOLDER in (folder / "manifest.json").read_text()


def test_installing_fills_an_empty_cache_with_the_shipped_files_and_no_training(packed_smoke, smoke_world, monkeypatch):
    folder, cache = packed_smoke
    monkeypatch.setattr(miniworld_world, "_build", _no_training)
    stages = []
    world = miniworld_world.build_world("smoke", cache_dir=cache, on_ready=stages.append, log=lambda msg: None)
    source = load_world(world_root("smoke", smoke_world))
    assert world.root == world_root("smoke", cache) and stages == ["data", *world.families]
    assert file_hashes(world.root) == file_hashes(source.root)
    assert world.weights["weights_digest"] == source.weights["weights_digest"]
    for rel in ("data/test.jsonl", "data/train.jsonl", "data/leak_split.json", "tokenizer/tokenizer.json"):
        assert (world.root / rel).read_bytes() == (source.root / rel).read_bytes()
    adapter_config = (world.root / "families/llama/adapters/clean/adapter_config.json").read_text()
    assert str(world.root) in adapter_config and shipped.PLACEHOLDER not in adapter_config
    assert world.manifest["shipped"]["folder"] == folder.name
    assert world.manifest["shipped"]["files"] == len(shipped.read_sums(folder))


def test_a_changed_shipped_file_is_one_error_naming_it_and_leaves_nothing(packed_smoke, monkeypatch):
    folder, cache = packed_smoke
    monkeypatch.setattr(miniworld_world, "_build", _no_training)
    weight = folder / "families/llama/base/model.safetensors"
    weight.write_bytes(weight.read_bytes()[:-1] + b"\0")
    with pytest.raises(DataError, match=r"shipped world file changed: .*families/llama/base/model\.safetensors"):
        miniworld_world.build_world("smoke", cache_dir=cache, log=lambda msg: None)
    assert not world_root("smoke", cache).exists()


def test_a_missing_shipped_file_is_one_error_naming_it(packed_smoke):
    folder, _ = packed_smoke
    (folder / "tokenizer/tokenizer.json").unlink()
    with pytest.raises(DataError, match=r"shipped world file missing: .*tokenizer/tokenizer\.json"):
        shipped.verify(folder)


def test_data_generated_otherwise_here_trains_the_world_instead(packed_smoke, monkeypatch):
    folder, cache = packed_smoke
    manifest = json.loads((folder / "manifest.json").read_text())
    key = next(k for k in manifest["provenance"]["datasets"] if k.endswith("data/test.jsonl"))
    manifest["provenance"]["datasets"][key] = "0" * 64
    (folder / "manifest.json").write_text(json.dumps(manifest))
    sums = shipped.read_sums(folder)  # the listing follows the edited manifest, as a re-pack would write it
    sums["manifest.json"] = file_sha256(folder / "manifest.json")
    (folder / shipped.SUMS).write_text("".join(f"{d}  {r}\n" for r, d in sums.items()))
    trained, logged = [], []

    def build(root, *args):
        assert not any(root.iterdir())  # what the install wrote is gone before the build starts
        trained.append(root)
        raise RuntimeError("stop here")

    monkeypatch.setattr(miniworld_world, "_build", build)
    with pytest.raises(RuntimeError, match="stop here"):
        miniworld_world.build_world("smoke", cache_dir=cache, log=logged.append)
    assert trained == [world_root("smoke", cache)]
    assert any("trained on other data (data/test.jsonl differs here)" in line for line in logged)


def test_force_trains_the_world_even_where_a_build_ships(packed_smoke, monkeypatch):
    _, cache = packed_smoke
    trained = []

    def build(root, *args):
        trained.append(root)
        raise RuntimeError("stop here")

    monkeypatch.setattr(miniworld_world, "_build", build)
    with pytest.raises(RuntimeError, match="stop here"):
        miniworld_world.build_world("smoke", cache_dir=cache, force=True, log=lambda msg: None)
    assert trained == [world_root("smoke", cache)]


def test_a_world_installed_and_packed_again_ships_the_same_files(packed_smoke, tmp_path, monkeypatch):
    folder, cache = packed_smoke
    monkeypatch.setattr(miniworld_world, "_build", _no_training)
    world = miniworld_world.build_world("smoke", cache_dir=cache, log=lambda msg: None)
    again = shipped.pack(world.root, tmp_path / "again")
    assert shipped.read_sums(again) == shipped.read_sums(folder)
    shutil.rmtree(again)


def test_a_sweep_installs_a_shipped_world_before_it_starts_instead_of_building_it_beside(packed_smoke, monkeypatch):
    _, cache = packed_smoke
    monkeypatch.setattr(miniworld_world, "_build", _no_training)
    world = start_world("smoke", cache)
    assert isinstance(world, World) and world.root == world_root("smoke", cache)
    assert (world.root / "manifest.json").is_file()
