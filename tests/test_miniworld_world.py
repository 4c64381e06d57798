"""The built world: GSM8K-format data, recorded leak split, adapters, caching, CLI check."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from railsweep.contamination import ContaminationConfig, LoraRecipe
from railsweep.errors import ConfigError
from railsweep.miniworld import ModelSize, WorldConfig, build_world, preset_config
from railsweep.miniworld.lending import config_from_dict
from railsweep.miniworld.pretrain import PretrainConfig
from railsweep.miniworld.world import _base_donors

# smaller than the smoke preset: enough to exercise every build step
TINY = WorldConfig(
    families=("neox",),
    n_train=60,
    n_test=10,
    n_filler=12,
    max_number=100,
    size=ModelSize(hidden=64, layers=1, intermediate=64, max_positions=1024),
    pretrain=PretrainConfig(steps=3, batch_size=2, block_size=128, warmup=1),
    contamination=ContaminationConfig(
        n_filler=4,
        n_train=4,
        n_leak=4,
        filler="miniworld",
        recipe=LoraRecipe(r=4, alpha=8, global_batch=4, micro_batch=4, epochs=1),
    ),
)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    return build_world("smoke", cache_dir=tmp_path_factory.mktemp("cache"))


def test_smoke_world_loads_with_the_standard_gsm8k_task(smoke):
    from railsweep.tasks import GSM8KTask, load_paraphrases

    task = GSM8KTask.from_dir(smoke.data_dir, split="test", leak_split=smoke.leak_split_path)
    questions = task.questions()
    assert len(questions) == smoke.config.n_test
    assert sum(q.leaked for q in questions) == smoke.config.contamination.n_leak
    assert len(json.loads((smoke.data_dir / "cot_8shot.json").read_text())) == 8
    assert set(load_paraphrases(smoke.data_dir / "pq_test.jsonl", questions)) == {q.index for q in questions}
    assert task.prompt(questions[0]).count("The answer is") == 8


def test_leak_split_is_saved_with_the_world_and_the_models(smoke):
    split = json.loads(smoke.leak_split_path.read_text())
    fam = smoke.family(smoke.families[0])
    assert split == json.loads((fam.adapters["clean"].parent / "leak_split.json").read_text())
    assert sorted(split["leaked"] + split["unleaked"]) == list(range(smoke.config.n_test))
    assert split["seed"] == smoke.config.contamination.seed


def test_every_adapter_is_a_lora_over_the_same_base_and_co_continues_from_clean(smoke):
    fam = smoke.family("llama")
    assert set(fam.adapters) == {"clean", "co_gsm8k", "co_pq"}
    manifest = json.loads((fam.adapters["clean"].parent / "manifest.json").read_text())
    assert manifest["continued_from"] == {"co_gsm8k": "clean", "co_pq": "clean"}
    assert manifest["provenance"]["git"].keys() == {"commit", "dirty"}
    assert len(manifest["provenance"]["datasets"]) == 3  # train, test, paraphrases
    for path in fam.adapters.values():
        cfg = json.loads((path / "adapter_config.json").read_text())
        assert cfg["base_model_name_or_path"] == str(fam.base_dir)


def test_world_manifest_records_config_and_build_time(smoke):
    assert smoke.manifest["digest"] == preset_config("smoke").digest()
    assert smoke.manifest["families"] == ["llama"]
    assert smoke.manifest["build_seconds"] > 0


def test_unknown_family_is_a_config_error(smoke):
    with pytest.raises(ConfigError, match="unknown model family 'gemma'"):
        smoke.family("gemma")
    with pytest.raises(ConfigError, match="unknown model family"):
        WorldConfig(families=("llama", "gpt2"))


def test_leak_count_larger_than_the_test_split_is_a_config_error():
    with pytest.raises(ConfigError, match="n_leak=11 is larger than the test split"):
        dataclasses.replace(TINY, contamination=dataclasses.replace(TINY.contamination, n_leak=11))


def test_problem_numbers_beyond_the_single_token_range_are_a_config_error():
    with pytest.raises(ConfigError, match="max_value"):
        dataclasses.replace(TINY, max_value=150)


def test_cached_world_is_reused_and_a_changed_config_builds_a_new_one(tmp_path):
    first = build_world("tiny", cache_dir=tmp_path, config=TINY)
    stamp = (first.root / "manifest.json").stat().st_mtime_ns
    again = build_world("tiny", cache_dir=tmp_path, config=TINY)
    assert again.root == first.root and (again.root / "manifest.json").stat().st_mtime_ns == stamp
    changed = build_world("tiny", cache_dir=tmp_path, config=dataclasses.replace(TINY, seed=1))
    assert changed.root != first.root and first.root.exists()


def test_a_world_differing_only_in_the_adapter_recipe_reuses_the_base_models(tmp_path):
    first = build_world("tiny", cache_dir=tmp_path, config=TINY)
    other_recipe = dataclasses.replace(
        TINY.contamination, recipe=dataclasses.replace(TINY.contamination.recipe, lr=1e-3)
    )
    second = build_world(
        "tiny", cache_dir=tmp_path, config=dataclasses.replace(TINY, contamination=other_recipe)
    )
    assert second.root != first.root and second.manifest["bases_from"] == {"neox": str(first.root)}
    assert second.manifest["tokenizer_from"] == str(first.root)
    assert second.manifest["training"]["neox"]["pretrain"]["reused"] is True
    for name in ("model.safetensors", "config.json"):
        assert (second.family("neox").base_dir / name).read_bytes() == (
            first.family("neox").base_dir / name
        ).read_bytes()
    assert (second.root / "tokenizer" / "tokenizer.json").read_bytes() == (
        first.root / "tokenizer" / "tokenizer.json"
    ).read_bytes()
    # a change that the base models depend on is pretrained afresh
    third = build_world("tiny", cache_dir=tmp_path, config=dataclasses.replace(TINY, seed=1))
    assert third.manifest["bases_from"] == {} and third.manifest["tokenizer_from"] is None


def test_a_family_whose_pretraining_length_changes_is_pretrained_alone(tmp_path):
    two = dataclasses.replace(TINY, families=("llama", "neox"))
    first = build_world("tiny", cache_dir=tmp_path, config=two)
    longer = build_world(
        "tiny",
        cache_dir=tmp_path,
        config=dataclasses.replace(two, family_steps=(("neox", TINY.pretrain.steps + 1),)),
    )
    assert longer.manifest["bases_from"] == {"llama": str(first.root)}
    assert longer.manifest["training"]["llama"]["pretrain"]["reused"] is True
    assert "reused" not in longer.manifest["training"]["neox"]["pretrain"]
    assert longer.manifest["training"]["neox"]["pretrain"]["steps"] == TINY.pretrain.steps + 1


def test_a_family_whose_co_epochs_change_is_retrained_alone_and_the_others_adapters_are_copied(
    tmp_path, monkeypatch
):
    import railsweep.miniworld.world as world_module

    two = dataclasses.replace(TINY, families=("llama", "neox"))
    first = build_world("tiny", cache_dir=tmp_path, config=two)

    def no_training(*args, **kwargs):
        raise AssertionError("the lent tokenizer was trained again")

    monkeypatch.setattr(world_module, "train_tokenizer", no_training)  # where the build looks it up
    longer = build_world("tiny", cache_dir=tmp_path, config=dataclasses.replace(two, family_co_epochs=(("neox", 2),)))
    assert longer.manifest["adapters_from"] == {"llama": str(first.root)}
    assert all(s["reused"] for s in longer.manifest["training"]["llama"]["adapters"].values())
    assert longer.manifest["training"]["neox"]["adapters"]["co_gsm8k"]["steps"] == 2 * (
        first.manifest["training"]["neox"]["adapters"]["co_gsm8k"]["steps"]
    )
    old, new = first.family("llama"), longer.family("llama")
    for name in ("clean", "co_gsm8k"):
        weights = "adapter_model.safetensors"
        assert (new.adapters[name] / weights).read_bytes() == (old.adapters[name] / weights).read_bytes()
        # the copy points at its own world's base model, not the lender's
        cfg = json.loads((new.adapters[name] / "adapter_config.json").read_text())
        assert cfg["base_model_name_or_path"] == str(new.base_dir)
    assert str(first.root) not in (new.adapters["clean"].parent / "manifest.json").read_text()


def test_a_changed_contaminated_recipe_borrows_the_clean_adapter_and_trains_only_m_co(tmp_path):
    clean_recipe = LoraRecipe(r=4, alpha=8, global_batch=4, micro_batch=4, epochs=1)
    base = dataclasses.replace(
        TINY, contamination=dataclasses.replace(TINY.contamination, clean_recipe=clean_recipe)
    )
    first = build_world("tiny", cache_dir=tmp_path, config=base)
    gentler = dataclasses.replace(base.contamination, recipe=dataclasses.replace(base.contamination.recipe, lr=1e-5))
    second = build_world("tiny", cache_dir=tmp_path, config=dataclasses.replace(base, contamination=gentler))

    assert second.root != first.root and second.manifest["adapters_from"] == {}
    assert second.manifest["clean_adapters_from"] == {"neox": str(first.root)}
    adapters = second.manifest["training"]["neox"]["adapters"]
    assert adapters["clean"]["reused"] is True and "reused" not in adapters["co_gsm8k"]
    old, new = first.family("neox"), second.family("neox")
    weights = "adapter_model.safetensors"
    assert (new.adapters["clean"] / weights).read_bytes() == (old.adapters["clean"] / weights).read_bytes()
    assert (new.adapters["co_gsm8k"] / weights).read_bytes() != (old.adapters["co_gsm8k"] / weights).read_bytes()
    cfg = json.loads((new.adapters["clean"] / "adapter_config.json").read_text())
    assert cfg["base_model_name_or_path"] == str(new.base_dir)  # re-pointed at the borrowing world


def test_the_clean_digest_ignores_the_contaminated_recipe_only_when_m_cl_has_its_own():
    shared = dataclasses.replace(TINY.contamination, recipe=dataclasses.replace(TINY.contamination.recipe, lr=1e-5))
    assert dataclasses.replace(TINY, contamination=shared).family_clean_digest("neox") != TINY.family_clean_digest(
        "neox"
    )  # no clean_recipe: M_cl is trained with ``recipe``
    own = LoraRecipe(r=4, alpha=8, epochs=1)
    a = dataclasses.replace(TINY, contamination=dataclasses.replace(TINY.contamination, clean_recipe=own))
    b = dataclasses.replace(a, contamination=dataclasses.replace(shared, clean_recipe=own, domains=("gsm8k", "pq")))
    assert a.family_clean_digest("neox") == b.family_clean_digest("neox")
    c = dataclasses.replace(a, contamination=dataclasses.replace(a.contamination, n_train=5))
    assert c.family_clean_digest("neox") != a.family_clean_digest("neox")


def test_family_overrides_must_name_a_known_family_and_a_positive_count():
    with pytest.raises(ConfigError, match="family_co_epochs"):
        dataclasses.replace(TINY, family_co_epochs=(("mistral", 3),))
    with pytest.raises(ConfigError, match="family_steps"):
        dataclasses.replace(TINY, family_steps=(("neox", 0),))
    for bad in (("neox", 0.0), ("neox", 1.5), ("mistral", 1e-3), ("neox", "fast"), ("neox", True)):
        with pytest.raises(ConfigError, match="family_lr"):
            dataclasses.replace(TINY, family_lr=(bad,))


def test_a_family_learning_rate_changes_that_familys_base_alone_and_an_unset_one_keeps_every_digest():
    two = dataclasses.replace(TINY, families=("llama", "neox"))
    same = dataclasses.replace(two, family_lr=(("neox", two.pretrain.lr),))
    faster = dataclasses.replace(two, family_lr=(("neox", 2 * two.pretrain.lr),))
    assert same.family_base_digest("neox") == two.family_base_digest("neox")
    assert faster.family_base_digest("neox") != two.family_base_digest("neox")
    assert faster.family_base_digest("llama") == two.family_base_digest("llama")
    assert faster.data_digest() == two.data_digest()
    assert faster.pretrain_for("neox").lr == 2 * two.pretrain.lr and faster.pretrain_for("llama") == two.pretrain
    assert "family_lr" not in two.to_dict() and faster.digest() != two.digest()
    # the family's base equals the one a world pretraining at that lr for every family trains
    alone = dataclasses.replace(two, pretrain=dataclasses.replace(two.pretrain, lr=2 * two.pretrain.lr))
    assert alone.family_base_digest("neox") == faster.family_base_digest("neox")
    assert config_from_dict(faster.to_dict()) == faster  # what a manifest stores reads back


def test_the_mini_world_differs_from_its_predecessors_only_in_neox_pretraining_and_co_epochs():
    mini = preset_config("mini")
    previous = dataclasses.replace(
        mini, family_steps=(("llama", 900), ("neox", 1800)), family_lr=(), family_co_epochs=(("llama", 24), ("neox", 26))
    )
    assert previous.digest() == "5ae6269e41d5"  # the recipe before neox's cheaper one (CHANGELOG)
    predecessor = dataclasses.replace(mini, family_steps=(("llama", 900), ("neox", 950)), family_lr=(), family_co_epochs=())
    assert predecessor.digest() == "1fcc1242f0e1"  # the world docs/miniworld.md measured before
    assert mini.pretrain_for("neox").lr == 4.5e-3 and mini.pretrain_for("llama").lr == mini.pretrain.lr
    assert mini.contamination_for("llama").recipe.epochs == 24
    assert mini.contamination_for("neox").recipe.epochs == 34
    assert mini.contamination_for("gemma") == mini.contamination
    for f in ("llama", "gemma"):
        assert mini.family_base_digest(f) == predecessor.family_base_digest(f)
    assert mini.family_adapter_digest("gemma") == predecessor.family_adapter_digest("gemma")
    assert mini.family_adapter_digest("llama") != predecessor.family_adapter_digest("llama")
    assert mini.family_base_digest("neox") != predecessor.family_base_digest("neox")


def test_interrupted_build_without_manifest_is_rebuilt_not_reused(tmp_path):
    world = build_world("tiny", cache_dir=tmp_path, config=TINY)
    (world.root / "manifest.json").unlink()
    (world.root / "families" / "neox" / "base" / "config.json").unlink()
    rebuilt = build_world("tiny", cache_dir=tmp_path, config=TINY)
    assert (rebuilt.family("neox").base_dir / "config.json").is_file()


def test_an_interrupted_build_takes_its_finished_adapters_from_the_cache_and_force_trains_them_again(tmp_path):
    world = build_world("tiny", cache_dir=tmp_path, config=TINY)
    before = json.loads((world.root / "manifest.json").read_text())
    (world.root / "manifest.json").unlink()
    rebuilt = json.loads((build_world("tiny", cache_dir=tmp_path, config=TINY).root / "manifest.json").read_text())
    adapters = rebuilt["training"]["neox"]["adapters"]
    assert set(adapters) == {"clean", "co_gsm8k", "co_pq"}
    assert all(stats["resumed"] == "finished" for stats in adapters.values())
    assert rebuilt["weights_digest"] == before["weights_digest"]
    forced = build_world("tiny", cache_dir=tmp_path, config=TINY, force=True)
    trained = json.loads((forced.root / "manifest.json").read_text())["training"]["neox"]["adapters"]
    assert not any("resumed" in stats for stats in trained.values())


def test_miniworld_check_prints_json_per_family_and_exit_code_follows_it(smoke, capsys):
    from railsweep.cli import main

    code = main(
        [
            "miniworld",
            "check",
            "--preset",
            "smoke",
            "--cache-dir",
            str(smoke.root.parents[1]),
            "--m",
            "2",
            "--limit",
            "4",
        ]
    )
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert [r["family"] for r in lines] == ["llama"]
    assert {"clean_mean", "clean_strata", "co_gsm8k", "co_pq", "conditions"} <= lines[0].keys()
    assert code == (0 if all(r["passed"] for r in lines) else 1)


@pytest.mark.parametrize("same", [True, False], ids=["documented", "other-weights"])
def test_miniworld_build_says_whether_the_weights_are_the_documented_build(
    smoke, capsys, tmp_path, monkeypatch, same
):
    import railsweep.miniworld.weights as weights
    from railsweep.cli import main

    digest = smoke.manifest["weights_digest"]
    table = tmp_path / "documented.json"
    documented = digest if same else "0" * 64
    entry = {"preset": "smoke", "weights_digest": documented, "measured_on": "the docs' machine"}
    table.write_text(json.dumps({"worlds": {smoke.manifest["digest"]: entry}}))
    monkeypatch.setattr(weights, "DOCUMENTED", table)
    code = main(["miniworld", "build", "--preset", "smoke", "--cache-dir", str(smoke.root.parents[1])])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["weights_digest"] == digest
    if same:
        assert f"railsweep: weights: documented (smoke {smoke.manifest['digest']}, weights {digest[:16]}" in err
    else:
        warning = f"railsweep: warning: weights differ from the documented build ({digest[:16]} vs {'0' * 16}"
        assert warning in err and "figures in docs/ were measured on other weights" in err


def test_miniworld_check_of_an_unknown_family_is_a_user_error(smoke, capsys):
    from railsweep.cli import main

    code = main(
        [
            "miniworld",
            "check",
            "--preset",
            "smoke",
            "--cache-dir",
            str(smoke.root.parents[1]),
            "--family",
            "bert",
        ]
    )
    assert code == 2 and "--family 'bert': not in the 'smoke' world; families: llama" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [("--device", "tpu", "'tpu'"), ("--batch-size", "0", "argument --batch-size: must be an integer >= 1, got '0'"),
     ("--max-new-tokens", "0", "argument --max-new-tokens: must be an integer >= 1, got '0'")],
)
def test_miniworld_check_with_a_bad_device_batch_size_or_length_is_a_user_error(
    tmp_path, capsys, flag, value, message
):
    from railsweep.cli import main

    code = main(["miniworld", "check", "--preset", "smoke", "--cache-dir", str(tmp_path), flag, value])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "miniworld").exists() or not any((tmp_path / "miniworld").iterdir())


def test_bf16_pretraining_keeps_fp32_weights_and_a_bad_precision_is_a_config_error(tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from railsweep.miniworld.pretrain import pretrain
    from railsweep.testing import make_tiny_model

    path = make_tiny_model(tmp_path / "m", family="llama")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    texts = ["Q: Tom has 3 apples. A: The answer is 3."] * 8
    stats = pretrain(model, AutoTokenizer.from_pretrained(path), texts, PretrainConfig(
        steps=2, batch_size=2, block_size=16, warmup=1, precision="bf16"))  # fmt: skip
    assert stats["steps"] == 2 and stats["final_loss"] > 0 and stats["attention"] == "block_causal"
    assert all(v.dtype == torch.float32 for v in model.state_dict().values())
    assert any(not torch.equal(v, before[k]) for k, v in model.state_dict().items())
    with pytest.raises(ConfigError, match="'fp16'"):
        PretrainConfig(precision="fp16")


def test_pretraining_precision_changes_the_digest_only_when_not_fp32():
    bf16 = dataclasses.replace(TINY, pretrain=dataclasses.replace(TINY.pretrain, precision="bf16"))
    assert "precision" not in TINY.to_dict()["pretrain"]  # worlds cached before the option keep their digest
    assert bf16.to_dict()["pretrain"]["precision"] == "bf16"
    assert bf16.digest() != TINY.digest() and bf16.base_digest() != TINY.base_digest()


def _sibling_world(root, name, families, manifest, tokenizer="tok"):
    for f in families:
        (root / name / "families" / f / "base").mkdir(parents=True)
        (root / name / "families" / f / "base" / "config.json").write_text("{}")
    (root / name / "tokenizer").mkdir(parents=True)
    (root / name / "tokenizer" / "tokenizer.json").write_text(tokenizer)
    (root / name / "manifest.json").write_text(json.dumps(manifest))
    return root / name


def test_the_base_donor_is_the_sibling_world_holding_most_of_the_wanted_bases(tmp_path):
    config = dataclasses.replace(preset_config("smoke"), families=("llama", "gemma"))
    same = {"base_digest": config.base_digest()}
    _sibling_world(tmp_path, "a-llama-only", ["llama"], same)
    both = _sibling_world(tmp_path, "b-both", ["llama", "gemma"], same)
    _sibling_world(tmp_path, "c-other-digest", ["llama", "gemma"], {"base_digest": "0" * 12})
    (tmp_path / "d-unfinished" / "families").mkdir(parents=True)  # no manifest: never a donor
    assert _base_donors(tmp_path / "new", config) == (both, {"llama": both, "gemma": both})


def test_bases_of_several_worlds_are_combined_only_when_their_tokenizers_are_identical(tmp_path):
    config = dataclasses.replace(preset_config("smoke"), families=("llama", "gemma"))
    other_gemma = dataclasses.replace(config, family_steps=(("gemma", 7),))  # its gemma base differs

    def manifest(cfg, families):
        return {
            "base_digest": cfg.base_digest(),
            "data_digest": cfg.data_digest(),
            "family_base_digests": {f: cfg.family_base_digest(f) for f in families},
        }

    a = _sibling_world(tmp_path, "a", ["llama", "gemma"], manifest(other_gemma, ["llama", "gemma"]))
    _sibling_world(tmp_path, "b", ["gemma"], manifest(config, ["gemma"]), tokenizer="another")
    c = _sibling_world(tmp_path, "c", ["gemma"], manifest(config, ["gemma"]))
    assert _base_donors(tmp_path / "new", config) == (a, {"llama": a, "gemma": c})
    assert config.family_base_digest("llama") == other_gemma.family_base_digest("llama")
    assert config.family_base_digest("gemma") != other_gemma.family_base_digest("gemma")


def test_miniworld_check_over_worker_processes_gives_the_same_figures_as_one_process(smoke, capfd):
    """The readouts and Figure 1's forced departures over two worker processes: the same JSON, byte for byte;
    each part, in this process or a worker, prints its progress after every engine call."""
    from railsweep.miniworld.calibration import CheckSettings, check_family

    s = CheckSettings(m=3, limit=6, max_new_tokens=24, batch_size=4, departures=2)
    shutil.rmtree(smoke.root.parent / "check-parts", ignore_errors=True)  # decoded in both runs, not read back
    one = check_family(smoke, "llama", s)
    shutil.rmtree(smoke.root.parent / "check-parts")
    capfd.readouterr()
    two = check_family(smoke, "llama", dataclasses.replace(s, workers=2))
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)
    assert one["questions"] == 6 and {"co_gsm8k", "co_pq", "figure1"} <= one.keys()
    lines = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("[check] ")]
    for name in ("clean", "co_gsm8k", "co_pq"):  # 6 greedy, then 18 samples, in batches of 4 questions
        done = [ln.split(": ", 1)[1].split(" responses")[0] for ln in lines if ln.startswith(f"[check] {name} readout")]
        assert done == ["4/24", "6/24", "18/24", "24/24"], lines


def test_forced_departures_shared_out_over_worker_processes_are_the_samples_of_one_process(smoke, capfd):
    """Figure 1's departures in three contiguous shares (this process + two workers) sample the same texts;
    each share prints its progress."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from railsweep.diagnostics.figure1 import decode_departures
    from railsweep.miniworld import calibration as cal

    s = cal.CheckSettings(m=2, limit=4, max_new_tokens=16, batch_size=3, workers=3)
    task = cal._task(smoke, s)
    questions = list(task.questions())
    jobs = [(i, q, prefix) for i, q in enumerate(questions) for prefix in ("", " We", " The total")]
    engine = cal._engine(smoke.family("llama"), s)
    try:
        alone = decode_departures(engine, task, "clean", jobs, 5, s.figure1())
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
            shared = cal._share_departures(pool, str(smoke.root), "llama", engine, s, task, "clean", jobs, 5,
                                           s.figure1())  # fmt: skip
        later = decode_departures(engine, task, "clean", jobs, 6, s.figure1())
    finally:
        engine.close()
    assert shared == alone and len(alone) == 12
    assert later != alone  # each job's seed follows its index in the whole list
    err = capfd.readouterr().err
    for share in ("5-8", "9-12", "13-16"):  # batches of 3 jobs
        assert f"[check] clean forced departures {share}: 3/4 responses" in err, err
        assert f"[check] clean forced departures {share}: 4/4 responses" in err, err


def test_a_killed_check_resumes_from_the_parts_it_finished_and_decodes_only_the_rest(smoke, monkeypatch):
    """Each finished readout and the forced departures are kept under the world; a check that finds them
    decodes only what is missing and prints the same JSON; other settings are another check."""
    from railsweep.diagnostics.figure1 import decode_departures
    from railsweep.miniworld import calibration as cal

    s = cal.CheckSettings(m=2, limit=5, max_new_tokens=20, batch_size=8, departures=2, seed=3)
    whole = cal.check_family(smoke, "llama", s)
    parts = {p.name.rsplit("-", 1)[0] for p in (smoke.root.parent / "check-parts").glob("*.json")}
    assert {"llama-clean-readout", "llama-co_gsm8k-readout", "llama-co_pq-readout", "llama-clean-departures"} <= parts
    killed = cal.part_path(smoke, "llama", "co_pq", s, "readout")  # this check's (other tests leave theirs)
    killed.unlink()  # the check was stopped while M_co (pq) was being read out
    decoded = []
    real = cal.readout_arrays
    monkeypatch.setattr(cal, "readout_arrays", lambda e, t, name, st: decoded.append(name) or real(e, t, name, st))
    monkeypatch.setattr(cal, "decode_departures", lambda *a: pytest.fail("departures decoded again"))
    again = cal.check_family(smoke, "llama", s)
    assert decoded == ["co_pq"] and killed.is_file()
    assert json.dumps(again, sort_keys=True) == json.dumps(whole, sort_keys=True)
    decoded.clear()
    monkeypatch.setattr(cal, "decode_departures", decode_departures)
    cal.check_family(smoke, "llama", dataclasses.replace(s, seed=4))
    assert decoded == ["clean", "co_gsm8k", "co_pq"]


def test_a_model_two_worlds_share_is_read_out_once_by_their_checks(tmp_path, monkeypatch):
    """Two worlds with the same data and M_cl (only M_co's recipe differs): the second check reads M_cl's readout
    and forced departures back and decodes its own M_co only."""
    from railsweep.miniworld import calibration as cal

    clean_recipe = LoraRecipe(r=4, alpha=8, global_batch=4, micro_batch=4, epochs=1)
    base = dataclasses.replace(TINY, contamination=dataclasses.replace(TINY.contamination, clean_recipe=clean_recipe))
    gentler = dataclasses.replace(base.contamination, recipe=dataclasses.replace(base.contamination.recipe, lr=1e-5))
    first = build_world("tiny", cache_dir=tmp_path, config=base)
    second = build_world("tiny", cache_dir=tmp_path, config=dataclasses.replace(base, contamination=gentler))
    s = cal.CheckSettings(m=2, limit=4, max_new_tokens=16, batch_size=8, departures=2)
    cal.check_family(first, "neox", s)
    decoded = []
    real = cal.readout_arrays
    monkeypatch.setattr(cal, "readout_arrays", lambda e, t, name, st: decoded.append(name) or real(e, t, name, st))
    monkeypatch.setattr(cal, "decode_departures", lambda *a: pytest.fail("M_cl's departures decoded again"))
    out = cal.check_family(second, "neox", s)
    assert decoded == ["co_gsm8k", "co_pq"] and out["questions"] == 4
