"""Resumable LoRA runs: a killed run continues from its checkpoint to the same adapter, a finished one is reused,
and a run whose inputs changed starts afresh."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest
from safetensors.torch import load_file

from railsweep.contamination import LoraRecipe, lora, resume, train_lora
from railsweep.testing import make_tiny_model

TEXTS = [f"Q: {a} plus {b}?\nA: {a} + {b} = {a + b}. The answer is {a + b}." for a, b in
         [(3, 4), (10, 5), (7, 8), (20, 1), (6, 6), (9, 2), (11, 3), (4, 15)]]  # fmt: skip
RECIPE = LoraRecipe(r=4, alpha=8, lr=5e-2, global_batch=2, micro_batch=2, epochs=2, max_length=64, dropout=0.1)


class Killed(Exception):
    pass


def kill_at(step: int):
    def hook(done: int, model) -> None:
        if done == step:
            raise Killed

    return hook


@pytest.fixture
def every_step(monkeypatch):
    monkeypatch.setattr(resume, "CHECKPOINT_EVERY_S", 0.0)


def weights(folder):
    return load_file(folder / "adapter_model.safetensors")


def test_a_killed_run_resumes_from_its_checkpoint_to_the_uninterrupted_runs_adapter(tiny_model_dir, tmp_path,
                                                                                    every_step):  # fmt: skip
    plain = train_lora(tiny_model_dir, TEXTS, RECIPE, tmp_path / "plain", device="cpu")
    with pytest.raises(Killed):
        train_lora(tiny_model_dir, TEXTS, RECIPE, tmp_path / "a", device="cpu", store=tmp_path / "runs",
                   on_step=kill_at(5))  # fmt: skip
    assert not (tmp_path / "a").exists()
    heard = []
    stats = train_lora(tiny_model_dir, TEXTS, RECIPE, tmp_path / "a", device="cpu", store=tmp_path / "runs",
                       on_step=lambda step, model: heard.append(step))  # fmt: skip
    assert stats["resumed_at_step"] == 5 and heard == [6, 7, 8] and stats["steps"] == plain["steps"] == 8
    assert stats["final_loss"] == plain["final_loss"] and stats["first_loss"] == plain["first_loss"]
    a, b = weights(tmp_path / "a"), weights(tmp_path / "plain")
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert not list((tmp_path / "runs").glob("*/checkpoint.pt"))  # dropped once finished


def test_a_finished_run_is_reused_without_loading_a_model(tiny_model_dir, tmp_path, monkeypatch):
    first = train_lora(tiny_model_dir, TEXTS, RECIPE, tmp_path / "a", device="cpu", store=tmp_path / "runs")
    monkeypatch.setattr(lora, "_load_model", lambda *a, **k: pytest.fail("a finished run trained again"))
    heard = []
    again = train_lora(tiny_model_dir, TEXTS, RECIPE, tmp_path / "b", device="cpu", store=tmp_path / "runs",
                       progress=lambda done, total: heard.append((done, total)))  # fmt: skip
    assert again == {**first, "resumed": "finished"} and heard == [(8, 8)]
    a, b = weights(tmp_path / "a"), weights(tmp_path / "b")
    assert all((a[k] == b[k]).all() for k in a)


def test_a_run_is_named_by_its_bases_files_not_its_path(tiny_model_dir, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(tiny_model_dir, moved)
    cpu = lora.arithmetic("cpu", "AVX2")
    assert resume.run_key(moved, TEXTS, RECIPE, None, cpu) == resume.run_key(Path(tiny_model_dir), TEXTS, RECIPE,
                                                                           None, cpu)  # fmt: skip


def test_a_run_trained_with_other_kernels_or_on_another_device_is_another_run(tiny_model_dir):
    keys = {resume.run_key(Path(tiny_model_dir), TEXTS, RECIPE, None, lora.arithmetic(dev, capability))
            for dev, capability in (("cpu", "AVX2"), ("cpu", "AVX512"), ("cuda:0", "AVX2"))}  # fmt: skip
    assert len(keys) == 3
    assert lora.arithmetic("cuda:1", "AVX2") == lora.arithmetic("cuda", "AVX512") == {"device": "cuda"}


@pytest.mark.parametrize("change", ["texts", "recipe", "init_adapter", "base", "arithmetic"])
def test_a_run_whose_inputs_changed_is_another_run(tiny_model_dir, tmp_path, monkeypatch, change):
    train_lora(tiny_model_dir, TEXTS, RECIPE, tmp_path / "a", device="cpu", store=tmp_path / "runs")
    if change == "arithmetic":  # another MKL dispatch pin (a build's AVX2 pin against a recipe search's native run)
        monkeypatch.setenv("MKL_CBWR", "SSE4_2" if os.environ.get("MKL_CBWR") != "SSE4_2" else "AVX2")
    texts, recipe, init = TEXTS, RECIPE, None
    if change == "texts":
        texts = TEXTS[:-1] + ["Q: 1 plus 1?\nA: 1 + 1 = 2. The answer is 2."]
    elif change == "recipe":
        recipe = dataclasses.replace(RECIPE, lr=4e-2)
    elif change == "init_adapter":
        init = tmp_path / "a"
    base = make_tiny_model(tmp_path / "other", family="llama", seed=1) if change == "base" else tiny_model_dir
    stats = train_lora(base, texts, recipe, tmp_path / "b", device="cpu", store=tmp_path / "runs",
                       init_adapter=init)  # fmt: skip
    assert "resumed" not in stats and len(list((tmp_path / "runs").iterdir())) == 2
