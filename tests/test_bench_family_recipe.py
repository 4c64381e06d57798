"""bench/family_recipe.py: one family built alone with its recipe replaced, then checked against the calibration."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import family_recipe as bench  # noqa: E402

from railsweep.miniworld.presets import preset_config  # noqa: E402


def test_a_recipe_replaces_only_the_named_familys_steps_lr_and_epochs():
    config = bench.recipe_config("mini", "neox", 1100, 4.5e-3, 34)
    assert config.families == ("neox",) and config.steps_for("neox") == 1100
    assert config.pretrain_for("neox").lr == 4.5e-3 and config.pretrain == preset_config("mini").pretrain
    assert config.contamination_for("neox").recipe.epochs == 34
    assert config.data_digest() == preset_config("mini").data_digest()  # the same benchmark


def test_a_recipe_left_at_the_presets_is_the_presets_family():
    mini, same = preset_config("mini"), bench.recipe_config("mini", "neox", None, None, None)
    assert same.family_base_digest("neox") == mini.family_base_digest("neox")
    assert same.family_adapter_digest("neox") == mini.family_adapter_digest("neox")
    tokens = mini.steps_for("neox") * mini.pretrain.batch_size * mini.pretrain.block_size
    assert bench.recipe(same, "neox") == bench.recipe(mini, "neox") | {"pretraining_tokens": tokens}


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--family", "gpt2"], "'gpt2' is not a family of mini"),
        (["--preset", "smollm2", "--family", "smollm2"], "real pretrained base"),
        (["--family", "neox", "--lr", "0"], "--lr: must be a finite number in (0, 1]"),
        (["--family", "neox", "--steps", "0"], "--steps: must be an integer >= 1"),
        (["--family", "neox", "--co-epochs", "x"], "--co-epochs: must be an integer >= 1"),
        (["--family", "neox", "--m", "0"], "--m: must be an integer >= 1"),
        (["--family", "neox", "--limit", "-3"], "--limit: must be an integer >= 1"),
        (["--family", "neox", "--preset", "tiny"], "invalid choice: 'tiny'"),
    ],
)
def test_a_bad_recipe_is_refused_before_anything_is_built(tmp_path, capsys, argv, words):
    """Each option's bad value, and a --cache-dir that cannot be written (below), exit 2 with nothing built."""
    with pytest.raises(SystemExit) as stop:
        bench.main([*argv, "--cache-dir", str(tmp_path / "cache")])
    assert stop.value.code == 2 and words in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_the_bench_builds_the_recipe_and_reports_its_check(tmp_path, capsys):
    argv = ["--preset", "smoke", "--family", "llama", "--steps", "3", "--co-epochs", "1", "--limit", "4", "--m", "2"]
    assert bench.main([*argv, "--cache-dir", str(tmp_path)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["recipe"]["steps"] == 3 and out["recipe"]["co_epochs"] == 1 and out["preset_recipe"]["steps"] == 120
    assert out["seconds"]["pretraining"] > 0 and out["seconds"]["adapters"] > 0
    assert set(out["conditions"]) >= {"clean_mean_in_range", "collapse_on_leaked", "off_rail_robust"}
    assert out["passed"] == all(out["conditions"].values()) and out["check"]["questions"] == 4


def test_a_cache_dir_that_cannot_be_written_is_refused(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as stop:
        bench.main(["--family", "neox", "--cache-dir", str(tmp_path / "file" / "cache")])
    assert stop.value.code == 2 and "--cache-dir" in capsys.readouterr().err
