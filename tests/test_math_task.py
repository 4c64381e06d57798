"""The MATH-style task: reading MATH-format data, its prompt, and a cell evaluated and graded end to end."""

from __future__ import annotations

import json

import pytest

from railsweep.config import CellConfig
from railsweep.engines.base import Completion, Sample
from railsweep.errors import ConfigError, DataError
from railsweep.evaluate import evaluate_cell, load_task
from railsweep.results import read_cell, read_responses
from railsweep.results.io import read_metadata
from railsweep.tasks.base import MATH_FEWSHOT
from railsweep.tasks.data.math_rows import load_math_exemplars, read_math_jsonl
from railsweep.tasks.kinds.gsm8k import GSM8KTask
from railsweep.tasks.kinds.math import MathTask

PROBLEMS = [
    ("What is $\\frac{1}{2} + \\frac{1}{4}$?", "Adding, $\\frac{2}{4} + \\frac{1}{4} = \\boxed{\\frac{3}{4}}$."),
    ("Simplify $\\sqrt{8}$.", "First $\\boxed{8}$ is wrong; $\\sqrt{8} = \\boxed{2\\sqrt{2}}$."),
]
SCRIPT = {  # problem index → the responses the scripted engine returns, in order
    0: ["So the sum is $\\boxed{0.75}$.", "It is \\boxed{\\frac{3}{4}}", "The answer is $\\frac{1}{3}$."],
    1: ["$\\boxed{\\sqrt{8}}$", "I get \\boxed{2\\sqrt{2}}. Hmm, or \\boxed{4}.", "\\boxed{2\\sqrt{2}"],
}
# by hand, (final, first) for each scripted response
VERDICTS = {
    "So the sum is $\\boxed{0.75}$.": (True, True),
    "It is \\boxed{\\frac{3}{4}}": (True, True),
    "The answer is $\\frac{1}{3}$.": (False, False),
    "$\\boxed{\\sqrt{8}}$": (True, True),
    "I get \\boxed{2\\sqrt{2}}. Hmm, or \\boxed{4}.": (False, True),
    "\\boxed{2\\sqrt{2}": (False, False),
}


class ScriptedEngine:
    """Returns SCRIPT's texts for each problem's prompt: the responses, so the verdicts, are fixed."""

    name = "scripted"

    def generate(self, requests):
        out = []
        for r in requests:
            last = r.prompt.rsplit("Problem: ", 1)[-1]
            i = next(i for i, (p, _) in enumerate(PROBLEMS) if last.startswith(p))
            out.append(Completion([Sample([1], text, "stop") for text in SCRIPT[i][: r.sampling.n]]))
        return out

    def adapters(self):
        return []

    def supports(self, intervention):
        return False

    def close(self):
        pass


@pytest.fixture
def task_dir(tmp_path):
    root = tmp_path / "math"
    root.mkdir()
    rows = [{"problem": p, "solution": s} for p, s in PROBLEMS]
    (root / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_gold_is_the_last_box_of_each_solution(task_dir):
    task = MathTask.from_dir(task_dir)
    assert [q.gold for q in task.questions()] == ["\\frac{3}{4}", "2\\sqrt{2}"]
    assert task.files == (task_dir / "test.jsonl", MATH_FEWSHOT)


def test_prompt_is_the_exemplars_then_the_problem_and_stops_at_the_next_problem(task_dir):
    task = MathTask.from_dir(task_dir)
    prompt = task.prompt(task.questions()[0])
    assert prompt.startswith("Problem: What is $\\frac{1}{2} + \\frac{1}{3}$?\nSolution: The common denominator")
    assert prompt.endswith("\n\nProblem: What is $\\frac{1}{2} + \\frac{1}{4}$?\nSolution:")
    assert prompt.count("Problem: ") == 5 and "Problem:" in task.stop


def test_shipped_exemplars_each_end_in_a_box():
    exemplars = load_math_exemplars()
    assert len(exemplars) == 4 and all(ex["solution"].rstrip(".$").endswith("}") for ex in exemplars)


@pytest.mark.parametrize(
    "line, words",
    [
        ('{"problem": "p", "solution": "no box here"}', "test.jsonl:2: 'solution' has no \\boxed{...} answer"),
        ('{"problem": "p", "solution": "\\\\boxed{1"}', "test.jsonl:2: 'solution' has no \\boxed{...} answer"),
        ('{"question": "p", "answer": "#### 1"}', "test.jsonl:2: expected an object with string 'problem'"),
        ("[1, 2]", "test.jsonl:2: expected an object with string 'problem'"),
        ("{not json", "test.jsonl:2: not valid JSON"),
        ("", "test.jsonl:2: blank line"),
    ],
)
def test_a_malformed_row_is_refused_with_its_line(tmp_path, line, words):
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps({"problem": "p", "solution": "\\boxed{1}"}) + "\n" + line + "\n")
    with pytest.raises(DataError) as e:
        read_math_jsonl(path)
    assert words in str(e.value)


def test_exemplars_without_a_box_are_refused(tmp_path):
    path = tmp_path / "shots.json"
    path.write_text(json.dumps([{"problem": "p", "solution": "The answer is 3."}]))
    with pytest.raises(DataError, match="exemplar 0: 'solution' has no"):
        load_math_exemplars(path)


def test_the_lm_eval_rule_is_refused_for_a_math_task(task_dir):
    with pytest.raises(ConfigError, match="final, first, got answer_rule='lm_eval'"):
        MathTask.from_dir(task_dir, answer_rule="lm_eval")
    with pytest.raises(ConfigError, match="answer_rule='lm_eval' does not apply to answer_type='math'"):
        CellConfig(model="m", strategy="identity", task_dir="t", answer_type="math", answer_rule="lm_eval")


def test_a_numeric_cell_keeps_its_id_and_a_math_cell_gets_another():
    cell = CellConfig(model="m", strategy="identity", task_dir="t")
    explicit = CellConfig(model="m", strategy="identity", task_dir="t", answer_type="numeric")
    math = CellConfig(model="m", strategy="identity", task_dir="t", answer_type="math")
    assert "answer_type" not in cell.to_dict() and cell.cell_id == explicit.cell_id
    assert math.to_dict()["answer_type"] == "math" and math.cell_id != cell.cell_id
    assert CellConfig.from_dict(math.to_dict()) == math
    assert math.task_files()[1] == MATH_FEWSHOT


@pytest.mark.parametrize("rule", ["final", "first"])
def test_a_math_cell_is_graded_by_latex_equivalence_and_records_both_rules(rule, task_dir, tmp_path):
    cell = CellConfig(
        model="m", strategy="identity", task_dir=str(task_dir), m=3, temperature=1.0,
        answer_rule=rule, answer_type="math",
    )  # fmt: skip
    assert isinstance(load_task(cell), MathTask)
    result = evaluate_cell(cell, ScriptedEngine(), out_dir=tmp_path / "out")
    got_cell, df = read_cell(result.paths.questions)
    grading = read_metadata(result.paths.questions)["grading"]
    assert got_cell.answer_type == "math" and grading["answer_rule"] == rule
    col = ("final", "first").index(rule)
    responses = read_responses(result.paths.responses)
    assert responses["correct"].tolist() == [VERDICTS[t][col] for t in responses["text"]]
    assert grading["n_correct"] == {"final": 3, "first": 4}
    assert grading["n_disagree"] == 1 and grading["n_responses"] == 6
    assert "lm_eval_strict_match" not in grading and "lm_eval_flexible_extract" not in grading  # GSM8K's own
    assert df["c"].sum() == grading["n_correct"][rule]


def test_a_task_of_another_answer_type_than_its_cell_is_refused(task_dir, tmp_path):
    cell = CellConfig(model="m", strategy="identity", task_dir=str(task_dir), m=1)
    with pytest.raises(
        ConfigError, match="the task grades under answer_type='math' but the cell says answer_type='numeric'"
    ):
        evaluate_cell(cell, ScriptedEngine(), MathTask.from_dir(task_dir), out_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert GSM8KTask.answer_type == "numeric"
