"""The sweep spec's ``readout.answer_type`` without a model: it reaches every cell (temperature cells and the
dynamics step's task included), the numeric default keeps every id, the combinations it cannot run are refused
at load, a MATH-style data folder is read before anything starts, and the dry run prices it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from railsweep.config import CellConfig
from railsweep.errors import ConfigError, DataError
from railsweep.evaluate import load_task
from railsweep.sweep.plan.cells import expand, temperature_groups
from railsweep.sweep.plan.price_inputs import sweep_questions
from railsweep.sweep.spec.sweep_spec import load_spec, spec_from_dict
from railsweep.tasks.answers.gsm8k_solution import to_cot
from railsweep.tasks.base import Question
from railsweep.tasks.kinds.gsm8k import GSM8KTask
from railsweep.tasks.kinds.math import MathTask

ROWS = [
    {"problem": "What is $\\frac{1}{4} + \\frac{1}{4}$?", "solution": "It is $\\boxed{\\frac{1}{2}}$."},
    {"problem": "What is $2 + 3$?", "solution": "So $2 + 3 = \\boxed{5}$."},
    {"problem": "What is $3 - 1$?", "solution": "We get $\\boxed{2}$."},
]


@pytest.fixture
def math_dir(tmp_path):
    root = tmp_path / "math"
    root.mkdir()
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (root / "leak.json").write_text(json.dumps({"leaked": [0]}))
    return root


def _paths_spec(data_dir, *, readout=None, **top) -> dict:
    models = data_dir.parent / "models"
    for d, conf in (("base", "config.json"), ("clean", "adapter_config.json"), ("co", "adapter_config.json")):
        (models / d).mkdir(parents=True, exist_ok=True)
        (models / d / conf).write_text("{}")
    spec = {
        "source": "paths", "data_dir": str(data_dir), "leak_split": str(data_dir / "leak.json"),
        "domains": ["gsm8k"], "strategies": ["identity", {"name": "railcap", "grid": {"n": [2, 4]}}],
        "families": {"llama": {"base": str(models / "base"),
                               "adapters": {"clean": str(models / "clean"), "co_gsm8k": str(models / "co")}}},
        "readout": {"m": 4, **(readout or {})},
    }  # fmt: skip
    return {**spec, **top}


def test_a_math_readout_reaches_every_cell_and_its_mlflow_params(math_dir):
    spec = spec_from_dict(_paths_spec(math_dir, readout={"answer_type": "math"}, temperatures=[0.3]))
    cells = expand(spec)
    assert {c.config.strategy for c in cells} == {"identity", "railcap", "temperature"}
    assert {c.config.answer_type for c in cells} == {"math"}
    assert {c.flat_params()["answer_type"] for c in cells} == {"math"}
    (group,) = temperature_groups(spec)
    assert group.task_cell["answer_type"] == "math"


def test_the_dynamics_step_reads_a_math_task_and_forces_its_solutions_as_written(math_dir):
    spec = spec_from_dict(_paths_spec(math_dir, readout={"answer_type": "math"}, temperatures=[0.3]))
    (group,) = temperature_groups(spec)
    task = load_task(CellConfig.from_dict(dict(group.task_cell)))  # what dynamics.step.group_tables loads
    assert isinstance(task, MathTask)
    assert [task.gold_chain(q) for q in task.questions()] == [r["solution"] for r in ROWS]
    assert [q.leaked for q in task.questions()] == [True, False, False]


def test_a_gsm8k_tasks_gold_chain_is_its_cot_rendering():
    q = Question(0, "q", "Half is 48/2=<<48/2=24>>24\n#### 24", "24")
    assert GSM8KTask([q], []).gold_chain(q) == to_cot(q.solution) == "Half is 48/2=24. The answer is 24."


def test_the_numeric_default_keeps_the_sweep_id_and_every_cell_id_and_math_changes_them(math_dir):
    plain = spec_from_dict(_paths_spec(math_dir))
    numeric = spec_from_dict(_paths_spec(math_dir, readout={"answer_type": "numeric"}))
    math = spec_from_dict(_paths_spec(math_dir, readout={"answer_type": "math"}))
    assert plain == numeric and plain.sweep_id == numeric.sweep_id
    assert "answer_type" not in json.dumps([c.config.to_dict() for c in expand(plain)])
    assert math.sweep_id != plain.sweep_id
    assert not {c.cell_id for c in expand(math)} & {c.cell_id for c in expand(plain)}
    smoke = load_spec("smoke")
    assert smoke.readout.answer_type == "numeric"
    assert (
        dataclasses.replace(smoke, readout=dataclasses.replace(smoke.readout, answer_type="numeric")).sweep_id
        == smoke.sweep_id
    )


@pytest.mark.parametrize("rule", ["final", "first"])
def test_both_math_rules_reach_the_cells(math_dir, rule):
    spec = spec_from_dict(_paths_spec(math_dir, readout={"answer_type": "math", "answer_rule": rule}))
    assert {(c.config.answer_type, c.config.answer_rule) for c in expand(spec)} == {("math", rule)}


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"readout": {"answer_type": "math", "answer_rule": "lm_eval"}},
         "readout: answer_rule='lm_eval' does not apply to answer_type='math'; its rules are final, first"),
        ({"readout": {"answer_type": "latex"}}, "readout.answer_type: input should be 'numeric' or 'math', got 'latex'"),
        ({"readout": {"answer_type": "math"}, "source": "miniworld"},
         "readout.answer_type 'math' needs source 'paths' with a MATH-format data_dir"),
        ({"readout": {"answer_type": "math"}, "source": "miniworld", "detectors": ["ngram"]},
         "readout.answer_type 'math' cannot be used with 'detectors'"),
    ],
)  # fmt: skip
def test_what_a_math_sweep_cannot_run_is_refused_at_load_in_one_line(math_dir, change, words):
    data = _paths_spec(math_dir)
    if change.get("source") == "miniworld":
        data = {"strategies": ["identity"]}
    data = {**data, **change, "readout": {**data.get("readout", {}), **change.get("readout", {})}}
    with pytest.raises(ConfigError) as e:
        spec_from_dict(data)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_math_spec_reads_every_row_of_its_data_before_anything_starts(math_dir, tmp_path):
    spec = spec_from_dict(_paths_spec(math_dir, readout={"answer_type": "math"}))
    spec.check_inputs()  # a MATH-format folder passes
    gsm8k = tmp_path / "gsm8k"
    gsm8k.mkdir()
    (gsm8k / "test.jsonl").write_text(json.dumps({"question": "1 + 1?", "answer": "#### 2"}) + "\n")
    with pytest.raises(
        DataError, match=r"test\.jsonl:1: expected an object with string 'problem' and 'solution'"
    ):
        dataclasses.replace(spec, data_dir=str(gsm8k)).check_inputs()
    (math_dir / "test.jsonl").write_text(
        json.dumps(ROWS[0]) + "\n" + json.dumps({"problem": "p", "solution": "4"})
    )
    with pytest.raises(DataError, match=r"test\.jsonl:2: 'solution' has no \\boxed"):
        spec.check_inputs()
    dataclasses.replace(spec, readout=dataclasses.replace(spec.readout, answer_type="numeric")).check_inputs()


def test_the_dry_run_counts_a_math_folders_problems_and_assumes_maths_test_size_without_one(
    math_dir, tmp_path
):
    spec = spec_from_dict(_paths_spec(math_dir, readout={"answer_type": "math"}))
    qs = sweep_questions(spec)
    assert (qs.n, qs.leaked) == (3, frozenset({0}))
    gone = sweep_questions(dataclasses.replace(spec, data_dir=str(tmp_path / "nowhere"), leak_split=None))
    assert gone.n == 5000 and gone.source.startswith("MATH's test split assumed")
    numeric = dataclasses.replace(spec, readout=dataclasses.replace(spec.readout, answer_type="numeric"))
    gone = sweep_questions(dataclasses.replace(numeric, data_dir=str(tmp_path / "nowhere"), leak_split=None))
    assert gone.n == 1319 and gone.source.startswith("GSM8K's test split assumed")
