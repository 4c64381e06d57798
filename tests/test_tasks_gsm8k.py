"""GSM8KTask: loading, the byte-exact 8-shot prompt, leak splits, and clear errors."""

from __future__ import annotations

import json

import pytest

from railsweep.errors import ConfigError, DataError
from railsweep.tasks import GSM8KTask, Task
from railsweep.tasks.data.gsm8k_rows import load_exemplars
from railsweep.tasks.data.shared_data import shared_data_dir

DATA = shared_data_dir()
GSM = DATA / "gsm8k"


def test_rendered_prefix_equals_the_harness_prefix_byte_for_byte():
    prefix = GSM8KTask.render_prefix(load_exemplars(GSM / "cot_8shot.json"))
    assert prefix.encode("utf-8") == (GSM / "cot_8shot_prefix.txt").read_bytes()


def test_prompt_is_prefix_then_question_ending_in_a_colon():
    task = GSM8KTask.from_dir(GSM, limit=3)
    q = task.questions()[1]
    expected = (GSM / "cot_8shot_prefix.txt").read_text(encoding="utf-8") + "Q: " + q.question + "\nA:"
    assert task.prompt(q) == expected


def test_task_satisfies_protocol_and_questions_carry_index_and_gold():
    task = GSM8KTask.from_dir(GSM)
    members = [m for m in vars(Task) if not m.startswith("_")] + list(Task.__annotations__)
    assert all(hasattr(task, m) for m in members)
    qs = task.questions()
    assert task.name == "gsm8k" and "Q:" in task.stop
    assert [q.index for q in qs[:3]] == [0, 1, 2] and qs[0].gold == "18"
    assert all("," not in q.gold for q in qs)
    assert sum(q.gold.startswith("-") for q in qs) == 2
    assert all(q.leaked is None for q in qs)


def test_train_split_and_limit():
    task = GSM8KTask.from_dir(GSM, split="train", limit=5)
    assert len(task.questions()) == 5 and task.split == "train"


@pytest.mark.parametrize("limit", [0, -1, 2.5])
def test_bad_limit_raises_config_error_naming_it(limit):
    with pytest.raises(ConfigError, match="limit"):
        GSM8KTask.from_dir(GSM, limit=limit)


def test_leak_split_marks_questions_true_and_false(tmp_path):
    p = tmp_path / "leak.json"
    p.write_text(json.dumps({"leaked": [0, 2], "unleaked": [1], "seed": 0}))
    qs = GSM8KTask.from_dir(GSM, limit=4, leak_split=p).questions()
    assert [q.leaked for q in qs] == [True, False, True, False]


def test_leak_split_out_of_range_index_raises_data_error(tmp_path):
    p = tmp_path / "leak.json"
    p.write_text(json.dumps({"leaked": [5, 1319]}))
    with pytest.raises(DataError, match="1319"):
        GSM8KTask.from_dir(GSM, leak_split=p)


def test_leak_split_on_train_split_is_a_config_error(tmp_path):
    p = tmp_path / "leak.json"
    p.write_text(json.dumps({"leaked": [0]}))
    with pytest.raises(ConfigError, match="train"):
        GSM8KTask.from_dir(GSM, split="train", leak_split=p)


def test_malformed_jsonl_line_raises_data_error_naming_file_and_line(tmp_path):
    (tmp_path / "cot_8shot.json").write_bytes((GSM / "cot_8shot.json").read_bytes())
    good = json.dumps({"question": "Q?", "answer": "1+1=2\n#### 2"})
    (tmp_path / "test.jsonl").write_text(good + "\n" + good + "\n" + '{"question": "x"\n')
    with pytest.raises(DataError, match=r"test\.jsonl:3"):
        GSM8KTask.from_dir(tmp_path)


def test_answer_without_hash_line_raises_data_error_with_line(tmp_path):
    (tmp_path / "test.jsonl").write_text(json.dumps({"question": "Q?", "answer": "2"}) + "\n")
    with pytest.raises(DataError, match=r"test\.jsonl:1.*####"):
        GSM8KTask.from_dir(tmp_path, fewshot_path=GSM / "cot_8shot.json")


def test_missing_data_dir_raises_data_error(tmp_path):
    with pytest.raises(DataError, match="not found"):
        GSM8KTask.from_dir(tmp_path / "nowhere")
