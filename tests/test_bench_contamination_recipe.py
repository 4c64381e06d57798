"""bench/contamination_recipe.py: options checked before anything loads, M_co's mix as the build makes it
(plus replay), and the pure helpers against naive recomputations. Nothing here trains a model."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from railsweep.contamination import save_leak_split
from railsweep.contamination.leak import make_leak_split
from railsweep.contamination.simulator import cot_example, training_mixes
from railsweep.miniworld import preset_config
from railsweep.miniworld.benchmark import write_benchmark
from railsweep.miniworld.cache import load_world

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import contamination_recipe as cr  # noqa: E402


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A small world folder laid out as a build lays it out (data, leak split, manifest, adapter
    configs), with the ``smollm2`` recipe over 40 train and 20 test problems; no model in it."""
    base = preset_config("smollm2")
    contamination = dataclasses.replace(base.contamination, n_filler=5, n_train=20, n_leak=10)
    config = dataclasses.replace(base, n_train=40, n_test=20, n_filler=10, contamination=contamination)
    root = tmp_path_factory.mktemp("world")
    write_benchmark(root / "data", config)
    save_leak_split(make_leak_split(20, 10, config.seed), root / "data" / "leak_split.json")
    manifest = {"preset": "smollm2", "digest": "not-the-preset", "config": config.to_dict(), "families": ["smollm2"]}
    (root / "manifest.json").write_text(json.dumps(manifest))
    for name in ("clean", "co_gsm8k", "co_pq"):
        folder = root / "families" / "smollm2" / "adapters" / name
        folder.mkdir(parents=True)
        (folder / "adapter_config.json").write_text("{}")
    return root


@pytest.mark.parametrize(
    ("option", "named"),
    [
        (["--lr", "0"], "--lr must lie in (0, 1), got 0.0"),
        (["--passes", "0"], "--passes must be >= 1, got 0"),
        (["--checkpoints", "1,5"], "--checkpoints must increase within 1..4 (--passes), got '1,5'"),
        (["--checkpoints", "2,1"], "got '2,1'"),
        (["--checkpoints", "one"], "comma list of pass counts, got 'one'"),
        (["--domain", "math"], "--domain 'math' is unknown"),
        (["--family", "llama"], "--family 'llama' is not in this world"),
        (["--replay", "-1"], "--replay must be >= 0, got -1"),
        (["--replay", "21"], "--replay 21 is more than M_cl's 20 train problems"),
        (["--questions", "0"], "--questions must be >= 1, got 0"),
        (["--leak-copies", "0"], "--leak-copies must be >= 1, got 0"),
        (["--batch", "0"], "--batch must be >= 1, got 0"),
        (["--store", __file__], f"--store {__file__} exists and is not a folder"),
    ],
)
def test_bad_option_is_one_error_line_with_exit_2_and_nothing_written(world, tmp_path, capsys, option, named):
    out = tmp_path / "points.jsonl"
    assert cr.main(["--world", str(world), "--out", str(out), *option]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("railsweep: error: ") and named in err[0]
    assert not out.exists()


def test_a_folder_that_is_no_built_world_is_named_in_the_error(tmp_path, capsys):
    assert cr.main(["--world", str(tmp_path), "--out", str(tmp_path / "p.jsonl")]) == 2
    assert f"--world {tmp_path}: no manifest.json" in capsys.readouterr().err


def test_a_world_without_the_domains_adapter_is_refused(world, tmp_path, capsys):
    clean = world / "families" / "smollm2" / "adapters" / "clean" / "adapter_config.json"
    clean.rename(clean.with_suffix(".away"))
    try:
        assert cr.main(["--world", str(world), "--out", str(tmp_path / "p.jsonl")]) == 2
    finally:
        clean.with_suffix(".away").rename(clean)
    assert "family smollm2 has no clean adapter" in capsys.readouterr().err


def test_the_search_runs_again_with_the_builds_arithmetic_pin_when_it_is_not_set(tmp_path):
    probe = tmp_path / "probe.py"  # what the re-run process sees of the pinned variables
    probe.write_text("import json, os\nprint(json.dumps({k: os.environ.get(k) for k in "
                     "('ATEN_CPU_CAPABILITY', 'MKL_CBWR', 'ONEDNN_MAX_CPU_ISA')}))\n")  # fmt: skip
    code = (f"import sys; sys.path.insert(0, {str(Path(cr.__file__).parent)!r}); import contamination_recipe as cr; "
            f"sys.argv = [{str(probe)!r}]; cr.pin_arithmetic()")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in cr.pinned_env()} | {"MKL_CBWR": "COMPATIBLE"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    seen = json.loads(out.strip().splitlines()[-1])
    # the pinned variables set, the one the user set left as set
    assert seen == {k: cr.pinned_env().get(k) for k in seen} | {"MKL_CBWR": "COMPATIBLE"}


def test_co_mix_is_the_filler_and_each_leaked_item_and_replay_and_copies_add_what_a_build_would(world):
    w = load_world(world)
    rows = [json.loads(line) for line in (world / "data" / "test.jsonl").read_text().splitlines()]
    leaked = {cot_example(rows[i]["question"], rows[i]["answer"]) for i in w.leaked}
    filler = set((world / "data" / "filler.txt").read_text().strip().split("\n\n")[:5])
    texts, pool = cr.co_texts(w, "smollm2", "gsm8k", 0)
    assert pool == 20 and len(texts) == 15 and set(texts) == leaked | filler
    replayed, _ = cr.co_texts(w, "smollm2", "gsm8k", 7, copies=3)
    extra = [t for t in replayed if t not in leaked | filler]
    assert len(replayed) == 5 + 3 * 10 + 7 and len(set(extra)) == 7 and all(t.startswith("Q: ") for t in extra)
    assert sorted(t for t in replayed if t in leaked) == sorted(list(leaked) * 3)
    config = dataclasses.replace(w.config.contamination_for("smollm2"), co_replay=7, leak_copies=3)
    rows_of = {s: [json.loads(x) for x in (world / "data" / f"{s}.jsonl").read_text().splitlines()] for s in ("train", "test")}
    filler_list = (world / "data" / "filler.txt").read_text().strip().split("\n\n")[:5]
    built = training_mixes(rows_of["train"], rows_of["test"], None, filler_list, w.leaked, dataclasses.replace(config, domains=("gsm8k",)))
    assert built["co_gsm8k"] == replayed  # the texts, in the order, a build with that recipe trains on


def test_pass_ends_are_the_running_sums_of_uneven_passes():
    assert cr.pass_ends([21, 20, 22]) == [21, 41, 63]


def test_paired_difference_is_the_mean_gap_with_a_percentile_interval_that_holds_it():
    a = np.array([1, 1, 0, 1, 0, 0, 1, 1, 1, 0])
    b = np.array([1, 0, 0, 1, 1, 0, 0, 0, 1, 0])
    d = cr.paired_difference(a, b, 4000, np.random.default_rng(0))
    assert d["value"] == pytest.approx((a - b).mean())
    naive = [(a - b)[np.random.default_rng(s).integers(0, 10, 10)].mean() for s in range(2000)]
    assert d["ci"][0] == pytest.approx(np.percentile(naive, 2.5), abs=0.05)
    assert d["ci"][1] == pytest.approx(np.percentile(naive, 97.5), abs=0.05)
    same = cr.paired_difference(a, a, 100, np.random.default_rng(0))
    assert same == {"value": 0.0, "ci": [0.0, 0.0]}


def test_split_score_counts_each_side_of_the_leak_with_its_wilson_interval():
    grades = [True, False, True, True, False, True]
    leaked = [True, True, False, False, False, True]
    s = cr.split_score(grades, leaked)
    assert (s["leaked"]["solved"], s["leaked"]["n"]) == (2, 3)
    assert (s["unleaked"]["solved"], s["unleaked"]["n"]) == (2, 3)
    z, p, n = 1.959964, 2 / 3, 3
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert s["leaked"]["wilson"] == pytest.approx([centre - half, centre + half], abs=1e-3)


def test_difference_to_clean_pairs_questions_and_keeps_the_leak_sides_apart():
    ref = {"pass": 0, "grades": [1, 1, 1, 0], "leaked_mask": [0, 0, 1, 1]}
    point = cr.with_difference({"pass": 2, "grades": [0, 1, 1, 1], "leaked_mask": [0, 0, 1, 1]}, ref, 200, 0)
    assert point["minus_clean"]["unleaked"]["value"] == -0.5
    assert point["minus_clean"]["leaked"]["value"] == 0.5
    assert "minus_clean" not in cr.with_difference({"pass": 2, "grades": [1]}, None, 200, 0)


def test_reference_is_the_clean_point_of_the_same_world_domain_and_questions(tmp_path):
    out = tmp_path / "points.jsonl"
    assert cr.reference_point(out, "W", "gsm8k", 40) is None
    rows = [{"pass": 0, "world": "W", "domain": "pq", "questions": 40, "tag": "pq"},
            {"pass": 1, "world": "W", "domain": "gsm8k", "questions": 40, "tag": "co"},
            {"pass": 0, "world": "W", "domain": "gsm8k", "questions": 40, "tag": "clean"}]  # fmt: skip
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cr.reference_point(out, "W", "gsm8k", 40)["tag"] == "clean"
    assert cr.reference_point(out, "W", "gsm8k", 20) is None


def test_side_means_split_the_leak_and_the_headroom_share_is_the_lift_over_what_m_cl_leaves():
    leaked = np.array([True, True, False, False])
    clean = {"c": np.array([8, 6, 5, 9]), "m": np.array([10, 10, 10, 10])}
    co = {"c": np.array([10, 9, 4, 9]), "m": np.array([10, 10, 10, 10])}
    means = cr.side_means(clean, co, leaked)
    assert means["clean_leaked_mean"] == pytest.approx(0.7) and means["co_leaked_mean"] == pytest.approx(0.95)
    assert means["clean_unleaked_mean"] == pytest.approx(0.7) and means["co_unleaked_mean"] == pytest.approx(0.65)
    assert means["lift_headroom_share"] == pytest.approx(0.25 / 0.3)
    full = {"c": np.array([10, 10, 5, 9]), "m": clean["m"]}
    assert np.isnan(cr.side_means(full, co, leaked)["lift_headroom_share"])  # no headroom: no share


def test_shared_prefix_leaves_every_row_one_token_of_its_own():
    assert cr.shared_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5, 6], [1, 2, 3, 4, 7]]) == 3
    assert cr.shared_prefix_length([[1, 2], [1, 2, 9]]) == 1
    assert cr.shared_prefix_length([[5, 2], [1, 2]]) == 0


def test_decoding_over_the_shared_prefix_cache_equals_plain_greedy_per_prompt(tiny_model_dir):
    """Switched off equals on: each answer is the one ``generate`` gives its prompt alone, for rows
    of different lengths padded inside one batch."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    prefix = "Q: Janet has 3 apples and buys 4 more. How many apples does she have?\nA: 3 + 4 = 7.\n\n"
    prompts = [prefix + f"Q: Janet has {a} apples and buys {b} more{tail}\nA:"
               for a, b, tail in [(10, 5, "."), (7, 8, ". How many apples does she have?"), (20, 1, "")]]  # fmt: skip
    got = cr.greedy_answers(model, tok, prompts, batch=2, max_new_tokens=8)
    for prompt, answer in zip(prompts, got):
        enc = tok(prompt, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(**enc, max_new_tokens=8, do_sample=False, pad_token_id=tok.pad_token_id,
                                 eos_token_id=tok.eos_token_id)  # fmt: skip
        assert answer == tok.decode(out[0, enc.input_ids.shape[1] :], skip_special_tokens=True)


def test_a_run_on_a_built_world_records_the_checks_figures_and_a_second_run_reuses_the_finished_training(
    smoke_world, tmp_path, capsys
):  # fmt: skip
    from railsweep.miniworld import build_world

    root = build_world("smoke", cache_dir=smoke_world).root
    out, store = tmp_path / "points.jsonl", tmp_path / "runs"
    argv = ["--world", str(root), "--out", str(out), "--passes", "2", "--checkpoints", "2", "--questions", "6",
            "--m", "3", "--max-new-tokens", "12", "--store", str(store), "--n-boot", "50"]  # fmt: skip
    assert cr.main(argv) == 0
    points = [json.loads(line) for line in out.read_text().splitlines()]
    assert [p["pass"] for p in points] == [0, 2]
    sampled = points[1]["sampled"]
    assert sampled["m"] == 3 and set(sampled["conditions"]) == {
        "leaked_lift", "unleaked_stable", "g_ap_above_zero", "collapse_on_leaked", "runner_up_at_divergence"
    }  # fmt: skip
    assert -1 <= sampled["leaked_lift"] <= 1 and 0 <= sampled["clean_mean"] <= 1
    assert sampled["leaked_lift"] == pytest.approx(sampled["co_leaked_mean"] - sampled["clean_leaked_mean"], abs=2e-4)
    assert sampled["conditions"]["leaked_lift"] == (sampled["leaked_lift"] >= 0.25)
    assert points[1]["sampled_seconds"] > 0 and points[1]["train_seconds"] >= 0
    assert len(list(store.glob("*/training.json"))) == 1
    capsys.readouterr()
    assert cr.main(argv) == 0  # M_cl's point is in --out, the training finished: nothing trains or scores again
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["resumed"] == "finished" and len(out.read_text().splitlines()) == 2
