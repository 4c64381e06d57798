"""``lm_eval:NAME`` wherever a task is named: refusals (one line, exit code 2, nothing written, no model loaded),
its content hash in the cell and sweep ids, and a cell evaluated end to end on the smoke world."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys

import pyarrow.parquet as pq
import pytest

from railsweep.cli import main
from railsweep.config import CellConfig
from railsweep.errors import ConfigError
from railsweep.evaluate import evaluate_cell
from railsweep.tasks.answers.lm_eval_gsm8k import grade_lm_eval, strict_match_correct
from railsweep.tasks.data.shared_data import shared_data_dir
from railsweep.tasks.kinds.gsm8k import GSM8KTask
from railsweep.tasks.lm_eval.spec import load_lm_eval_spec

GSM8K = shared_data_dir() / "gsm8k"


def _eval(model_dir, task, task_dir, out, *extra):
    return main(["eval", "--model", str(model_dir), "--task", task, "--task-dir", str(task_dir),
                 "--strategy", "identity", "--out", str(out), *extra])  # fmt: skip


@pytest.mark.parametrize(
    "task,message",
    [("lm_eval:hellaswag", "task 'lm_eval:hellaswag': lm_eval scores it by log-likelihood "
      "(output_type='multiple_choice'); railsweep samples answers, so it runs generate_until tasks only"),
     ("lm_eval:gsm8k_cto", "task 'lm_eval:gsm8k_cto': lm_eval 0.4.13 has no task named 'gsm8k_cto'; "
      "did you mean 'lm_eval:gsm8k_cot'?"),
     ("lm_eval:truthfulqa_gen", "task 'lm_eval:truthfulqa_gen': its first metric 'bleu_max' is not a 0/1 verdict per "
      "sample, and railsweep counts correct samples; harness tasks scored by acc, acc_norm, bleu_acc, em, "
      "exact_match, prompt_level_loose_acc, prompt_level_strict_acc, rouge1_acc, rouge2_acc, rougeL_acc run")],
)  # fmt: skip
def test_eval_refuses_a_loglikelihood_or_unknown_harness_task_in_one_line(task, message, model_dir, tmp_path, capsys):
    out = tmp_path / "out"
    code = _eval(model_dir, task, GSM8K, out)
    assert code == 2 and capsys.readouterr().err.strip().splitlines() == [f"railsweep: error: {message}"]
    assert not out.exists()


def test_a_task_whose_code_needs_a_missing_package_is_one_line_naming_the_harness_extra(
    model_dir, tmp_path, capsys, monkeypatch
):
    """ifeval's utils.py imports langdetect, which only lm_eval[ifeval] installs: hidden here, whatever this
    environment holds."""
    monkeypatch.setitem(sys.modules, "langdetect", None)  # an import of it raises ModuleNotFoundError
    load_lm_eval_spec.cache_clear()
    out = tmp_path / "out"
    code = _eval(model_dir, "lm_eval:ifeval", GSM8K, out)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "'langdetect' is not installed" in err[0] and "pip install 'lm_eval[ifeval]'" in err[0]
    assert not out.exists()
    load_lm_eval_spec.cache_clear()


def test_eval_refuses_a_task_dir_without_a_split_the_config_names(model_dir, tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(GSM8K / "test.jsonl", data / "test.jsonl")  # gsm8k draws its exemplars from train: missing
    out = tmp_path / "out"
    code = _eval(model_dir, "lm_eval:gsm8k", data, out)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0] == (
        f"railsweep: error: task 'lm_eval:gsm8k' reads split 'train': no file {data}/train.{{jsonl,json,csv,parquet}} "
        "(the harness config's splits: test, train)"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "field,value,message",
    [("fewshot", "shots.json", "takes its few-shot examples from lm_eval"),
     ("split", "train", "evaluates the split its lm_eval config names")],
)  # fmt: skip
def test_a_harness_cell_refuses_its_own_fewshot_file_or_split(field, value, message):
    with pytest.raises(ConfigError, match=message):
        CellConfig(model="m", strategy="identity", task_dir=str(GSM8K), task="lm_eval:gsm8k_cot", **{field: value})


def test_the_harness_config_hash_enters_the_cell_id():
    cot = CellConfig(model="m", strategy="identity", task_dir=str(GSM8K), task="lm_eval:gsm8k_cot")
    plain = dataclasses.replace(cot, task="lm_eval:gsm8k", task_sha256=None)
    assert cot.task_sha256 == load_lm_eval_spec("lm_eval:gsm8k_cot").sha256
    assert cot.answer_rule == "lm_eval" and cot.answer_type == "lm_eval"
    assert len({cot.cell_id, plain.cell_id, CellConfig(model="m", strategy="identity", task_dir=str(GSM8K)).cell_id}) == 3
    assert CellConfig.from_dict(cot.to_dict()) == cot


def test_a_sweep_spec_names_a_harness_task_in_its_readout():
    from railsweep.sweep.plan.cells import expand
    from railsweep.sweep.spec.sections import FamilySpec
    from railsweep.sweep.spec.sweep_spec import load_spec

    adapters = tuple((a, f"/p/{a}") for a in ("clean", "co_gsm8k", "co_pq"))
    plain = dataclasses.replace(
        load_spec("smoke"), source="paths", families=(FamilySpec("llama", "/p/base", adapters),), data_dir="/p/data"
    )
    on = dataclasses.replace(plain, readout=dataclasses.replace(plain.readout, task="lm_eval:gsm8k_cot"))
    sha = load_lm_eval_spec("lm_eval:gsm8k_cot").sha256
    assert {(c.config.task, c.config.task_sha256) for c in expand(on)} == {("lm_eval:gsm8k_cot", sha)}
    assert on.sweep_id != plain.sweep_id
    with pytest.raises(ConfigError, match="output_type='multiple_choice'"):
        dataclasses.replace(plain.readout, task="lm_eval:hellaswag")  # the readout checks its task when made
    with pytest.raises(ConfigError, match="is a harness group of 27 tasks and this reads one task"):
        dataclasses.replace(plain.readout, task="lm_eval:bbh_cot_fewshot")


def test_a_filter_of_a_harness_task_is_an_answer_rule_by_the_harness_name():
    """The harness reports each filter on its own; grading a cell under a filter's name gives that number."""
    from railsweep.sweep.spec.sweep_spec import load_spec

    readout = load_spec("smoke").readout
    on = dataclasses.replace(readout, task="lm_eval:gsm8k_cot", answer_rule="flexible-extract")
    assert on.answer_rule == "flexible-extract"
    cell = CellConfig(model="m", strategy="identity", task_dir="/d", task="lm_eval:gsm8k_cot", answer_rule="strict-match")
    assert cell.answer_rule == "strict-match" and cell.to_dict()["answer_rule"] == "strict-match"
    with pytest.raises(ConfigError, match=r"has no answer rule 'strict'; its rules: lm_eval, strict-match, flexible-extract"):
        dataclasses.replace(readout, task="lm_eval:gsm8k_cot", answer_rule="strict")


def test_a_harness_cell_runs_end_to_end_and_its_counts_are_the_harness_filters(smoke_world, tmp_path):
    """gsm8k_cot on the smoke world's GSM8K-format test set: every response graded by the harness's filters,
    which for this task the coded re-implementation (railsweep.tasks.answers.lm_eval_gsm8k) reproduces."""
    from railsweep.engines.transformers_engine import TransformersEngine
    from railsweep.miniworld import build_world

    world = build_world("smoke", cache_dir=smoke_world)
    fam = world.family("llama")
    cell = CellConfig(model="m", strategy="identity", task_dir=str(world.data_dir), adapter="co_gsm8k", m=3,
                      temperature=1.0, max_new_tokens=60, task="lm_eval:gsm8k_cot", limit=12)  # fmt: skip
    eng = TransformersEngine(fam.base_dir, {k: str(v) for k, v in fam.adapters.items()}, device="cpu", dtype="float32")
    try:
        result = evaluate_cell(cell, eng, out_dir=tmp_path / "cell")
    finally:
        eng.close()
    pairs = [(s.text, result.outcomes[i].index) for i in range(len(result.outcomes)) for s in result.outcomes[i].samples]
    gold = {q.index: q.gold for q in GSM8KTask.from_dir(world.data_dir).questions()}
    a = result.agreement
    assert result.n_questions == 12 and a.n_responses == len(pairs) == 36
    assert a.n_correct["lm_eval"] == sum(grade_lm_eval(t, gold[i]).correct for t, i in pairs)
    assert a.n_correct["strict-match"] == sum(strict_match_correct(t, gold[i]) for t, i in pairs)
    assert set(a.n_correct) == {"lm_eval", "strict-match", "flexible-extract"}  # the task's own filters
    assert a.lm_eval_strict_match is None and "lm_eval_strict_match" not in a.to_dict()  # no built-in GSM8K counter
    assert sum(o.c for o in result.outcomes) == a.n_correct["lm_eval"]
    prov = json.loads(pq.read_schema(result.paths.questions).metadata[b"railsweep.provenance"])
    assert prov["packages"]["lm_eval"] == "0.4.13"
    assert set(prov["datasets"]) == {str(world.data_dir / "test.jsonl"), str(load_lm_eval_spec(cell.task).source)}


@pytest.mark.parametrize("given, want", [([], 1024), (["--max-new-tokens", "64"], 64)])
def test_a_harness_tasks_own_response_budget_is_the_default_and_the_option_overrides_it(given, want, capsys):
    from railsweep.cli import make_parser
    from railsweep.commands.eval import response_budget

    args = make_parser(["eval"]).parse_args(
        ["eval", "--model", "m", "--task", "lm_eval:bbh_cot_fewshot_date_understanding", "--task-dir", str(GSM8K),
         "--strategy", "identity", "--out", "o", *given])  # fmt: skip
    assert response_budget(args) == want  # bbh's generation_kwargs: max_gen_toks 1024
    assert ("generation_kwargs" in capsys.readouterr().out) == (not given)


def test_a_sweep_reads_a_harness_tasks_own_response_budget_unless_the_spec_gives_one():
    import yaml

    from railsweep.sweep.spec.sweep_spec import PRESET_DIR, spec_from_dict

    raw = yaml.safe_load((PRESET_DIR / "smoke.yaml").read_text())
    task = "lm_eval:bbh_cot_fewshot_date_understanding"  # generation_kwargs: max_gen_toks 1024
    raw["readout"] = {k: v for k, v in raw["readout"].items() if k != "max_new_tokens"}
    assert spec_from_dict({**raw, "readout": {**raw["readout"], "task": task}}).readout.max_new_tokens == 1024
    assert spec_from_dict({**raw, "readout": {**raw["readout"], "task": task, "max_new_tokens": 64}}).readout.max_new_tokens == 64
    assert spec_from_dict(raw).readout.max_new_tokens == 256  # no harness task: railsweep's default
