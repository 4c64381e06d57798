"""Harness groups and tags: ``railsweep eval --task lm_eval:GROUP`` runs one cell per member task, as the harness
expands the name; elsewhere a group is refused naming its members."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from railsweep.cli import main
from railsweep.errors import ConfigError
from railsweep.tasks.lm_eval.groups import expand_lm_eval_ref
from railsweep.tasks.task_ref import load_task_spec


def test_a_group_expands_into_its_listed_tasks_in_order():
    e = expand_lm_eval_ref("lm_eval:bbh_cot_fewshot")
    assert e.kind == "group" and e.group == "lm_eval:bbh_cot_fewshot" and len(e.members) == 27
    assert e.members[:2] == ("lm_eval:bbh_cot_fewshot_boolean_expressions", "lm_eval:bbh_cot_fewshot_causal_judgement")
    assert e.members[-1] == "lm_eval:bbh_cot_fewshot_word_sorting"


def test_a_tag_set_in_an_included_file_expands_into_every_task_that_carries_it():
    e = expand_lm_eval_ref("lm_eval:mgsm_direct")
    assert e.kind == "tag" and len(e.members) == 11 and "lm_eval:mgsm_direct_en" in e.members
    assert list(e.members) == sorted(e.members)


def test_a_task_expands_into_itself():
    e = expand_lm_eval_ref("lm_eval:gsm8k_cot")
    assert e.kind == "task" and e.group is None and e.members == ("lm_eval:gsm8k_cot",)


def test_a_group_where_one_task_is_named_is_refused_naming_its_members():
    with pytest.raises(ConfigError, match=r"is a harness group of 27 tasks and this reads one task: name one "
                       r"\(lm_eval:bbh_cot_fewshot_boolean_expressions, "):  # fmt: skip
        load_task_spec("lm_eval:bbh_cot_fewshot")


def test_eval_of_a_group_without_a_folder_per_member_is_one_line_before_the_model_loads(model_dir, tmp_path, capsys):
    data = tmp_path / "data"
    (data / "mgsm_direct_bn").mkdir(parents=True)
    out = tmp_path / "out"
    code = main(["eval", "--model", str(model_dir), "--task", "lm_eval:mgsm_direct", "--task-dir", str(data),
                 "--strategy", "identity", "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and not out.exists()
    assert err[0].startswith("railsweep: error: --task lm_eval:mgsm_direct (a harness tag of 11 tasks) reads each "
                             f"member's split files from --task-dir/<member>/: no folder {data / 'mgsm_direct_de'}")  # fmt: skip
    assert err[0].endswith("and 7 more")


def _mgsm_rows(n: int) -> str:
    rows = [{"question": f"Tom has {k} apples and buys {k + 2}. How many now?", "answer": None,
             "answer_number": 2 * k + 2, "equation_solution": None} for k in range(1, n + 1)]  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in rows)


def test_eval_of_a_tag_writes_one_cell_per_member_each_recording_the_tag(smoke_world, tmp_path, capsys):
    from railsweep.miniworld import build_world

    world = build_world("smoke", cache_dir=smoke_world)
    fam = world.family("llama")
    data = tmp_path / "data"
    members = expand_lm_eval_ref("lm_eval:mgsm_direct").members
    for m in members:
        d = data / m.split(":", 1)[1]
        d.mkdir(parents=True)
        (d / "test.jsonl").write_text(_mgsm_rows(3))
        (d / "train.jsonl").write_text(_mgsm_rows(2))
    out = tmp_path / "cells"
    code = main(["eval", "--model", str(fam.base_dir), "--task", "lm_eval:mgsm_direct", "--task-dir", str(data),
                 "--strategy", "identity", "--m", "1", "--limit", "2", "--max-new-tokens", "6", "--out", str(out),
                 "--dtype", "float32"])  # fmt: skip
    assert code == 0
    cells = sorted(out.glob("*.parquet"))
    questions = [p for p in cells if not p.name.endswith(".responses.parquet")]
    assert len(questions) == 11
    seen = set()
    for p in questions:
        meta = pq.read_schema(p).metadata
        cell = json.loads(meta[b"railsweep.cell"])
        provenance = json.loads(meta[b"railsweep.provenance"])
        assert provenance["task_group"] == "lm_eval:mgsm_direct" and provenance["max_new_tokens_from"] == "--max-new-tokens"
        assert cell["task_dir"] == str(data / cell["task"].split(":", 1)[1])
        assert provenance["temperature_from"] == f"--temperature (m samples; {cell['task']}'s generation_kwargs set do_sample=False)"
        seen.add(cell["task"])
    assert seen == set(members)
