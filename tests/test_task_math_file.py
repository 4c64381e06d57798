"""The shipped ``math`` task file: loaded by name, it declares the coded MATH-style task (``MathTask``).

Same prompts, golds and gold chains on a few problems whose boxes nest and repeat; the same grade as
``grade_math`` under ``final`` and ``first`` for hand-picked responses (verdicts written down by hand) and for
random responses built from boxes, "The answer is" sentences and stop strings.
"""

from __future__ import annotations

import json
import random

import pytest

from railsweep.config import CellConfig
from railsweep.evaluate import load_task
from railsweep.tasks.kinds.file_task import FileTask
from railsweep.tasks.kinds.math import MathTask
from railsweep.tasks.task_ref import build_task, load_task_spec

PROBLEMS = [
    ("What is $\\frac{1}{2} + \\frac{1}{4}$?", "Adding, $\\frac{2}{4} + \\frac{1}{4} = \\boxed{\\frac{3}{4}}$."),
    ("Simplify $\\sqrt{8}$.", "First $\\boxed{8}$ is wrong; $\\sqrt{8} = \\boxed{2\\sqrt{2}}$."),
    ("Write $x^2-1$ as a product.", "It factors: $\\boxed{(x-1)(x+1)}$."),
]
# response -> (correct under final, correct under first) for each problem it is graded against, by hand
HAND = [
    (0, "So the sum is $\\boxed{0.75}$.", True, True),
    (0, "The answer is $\\frac{1}{3}$.", False, False),
    (0, "The answer is $\\frac{3}{4}$. I hope it is correct.", True, True),
    (1, "I get \\boxed{2\\sqrt{2}}. Hmm, or \\boxed{4}.", False, True),
    (1, "\\boxed{2\\sqrt{2}", False, False),  # the box never closes: no answer
    (1, "$\\boxed{\\sqrt{8}}$\nProblem: What is 1+1? Solution: \\boxed{2}", True, True),  # cut at the next problem
    (2, "\\boxed{x^2 - 1}", True, True),
    (2, "\\boxed{(x+1)(x-1)}", True, True),
    (2, "\\boxed{x^2+1}", False, False),
]


@pytest.fixture
def task_dir(tmp_path):
    rows = [{"problem": p, "solution": s} for p, s in PROBLEMS]
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_the_math_file_is_shipped_and_grades_latex_answers():
    spec = load_task_spec("math")
    assert spec.builtin and spec.answer_type == "math" and spec.rule_names == ("final", "first")


def test_the_math_file_sends_the_coded_prompts_golds_and_chains(task_dir):
    coded = MathTask.from_dir(task_dir)
    declared = build_task(load_task_spec("math"), task_dir)
    assert [q.gold for q in declared.questions()] == [q.gold for q in coded.questions()] == [
        "\\frac{3}{4}", "2\\sqrt{2}", "(x-1)(x+1)"]  # fmt: skip
    for a, b in zip(declared.questions(), coded.questions()):
        assert declared.prompt(a) == coded.prompt(b)
        assert declared.gold_chain(a) == coded.gold_chain(b)
    assert declared.stop == coded.stop


@pytest.mark.parametrize("rule", ["final", "first"])
def test_the_math_file_grades_hand_picked_responses_as_written_down(task_dir, rule):
    declared = build_task(load_task_spec("math"), task_dir, answer_rule=rule)
    qs = declared.questions()
    got = [declared.grade(text, qs[i]).correct for i, text, *_ in HAND]
    assert got == [final if rule == "final" else first for _, _, final, first in HAND]


@pytest.mark.parametrize("rule", ["final", "first"])
def test_the_math_file_grades_random_responses_as_the_coded_task(task_dir, rule):
    coded = MathTask.from_dir(task_dir, answer_rule=rule)
    declared = build_task(load_task_spec("math"), task_dir, answer_rule=rule)
    parts = ["\\boxed{\\frac{3}{4}}", "\\boxed{0.75}", "\\boxed{2\\sqrt{2}}", "\\boxed{4}", "\\boxed{(x+1)(x-1)}",
             "The answer is $\\frac{3}{4}$.", "The answer is 2\\sqrt{2}.", "\\boxed{", "}", "\nProblem: next",
             "so ", "$", " and ", "\\fbox{4}"]  # fmt: skip
    rng = random.Random(0)
    for _ in range(300):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 6)))
        for a, b in zip(declared.questions(), coded.questions()):
            got, want = declared.grade(text, a), coded.grade(text, b)
            assert (got.correct, got.pred, got.rule) == (want.correct, want.pred, want.rule), text


def test_a_cell_naming_math_loads_the_file_task_and_records_the_name(task_dir):
    cell = CellConfig(model="m", strategy="identity", task_dir=str(task_dir), task="math")
    assert cell.task == "math" and cell.answer_type == "math" and cell.task_sha256 is None
    assert isinstance(load_task(cell), FileTask)
    assert cell.cell_id != CellConfig(model="m", strategy="identity", task_dir=str(task_dir), answer_type="math").cell_id
