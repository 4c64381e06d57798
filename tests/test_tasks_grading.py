"""The GSM8K grader: strict "The answer is N" first, last number as fallback, numeric comparison."""

from __future__ import annotations

import pytest

from railsweep.tasks import GSM8KTask, grade, to_cot
from railsweep.testing import shared_data_dir

DATA = shared_data_dir()

CASES = [
    # response, gold, correct, pred, rule
    ("So 9 * 2 = 18. The answer is 18.", "18", True, "18", "strict"),
    ("The answer is 18", "18", True, "18", "strict"),
    ("the answer is 18.", "18", True, "18", "strict"),
    ("The answer is: 18.", "18", True, "18", "strict"),
    ("Total 1,234 apples. The answer is 1,234.", "1234", True, "1234", "strict"),
    ("The answer is 1234.", "1,234", True, "1234", "strict"),
    ("The answer is $18.00.", "18", True, "18", "strict"),
    ("The answer is $ 18.", "18", True, "18", "strict"),
    ("The answer is 18.5.", "18", False, "18.5", "strict"),
    ("The answer is -3.", "-3", True, "-3", "strict"),
    ("The answer is 3.", "-3", False, "3", "strict"),
    ("He lost money, so the change is -3 dollars", "-3", True, "-3", "flexible"),
    ("So 5-3 = 2 and 2-2", "2", True, "2", "flexible"),
    ("I do not know.", "18", False, None, "none"),
    ("", "18", False, None, "none"),
    ("The answer is 18. Next, 20 more apples and 7 pears.", "18", True, "18", "strict"),
    ("The answer is 18. Later: the answer is 20.", "20", False, "18", "strict"),
    ("She makes 9 * 2 = $18.00 every day.", "18", True, "18", "flexible"),
    ("There are 1,000,000 grains", "1000000", True, "1000000", "flexible"),
    ("It costs $0.50 each", "0.5", True, "0.5", "flexible"),
    ("The answer is 0.", "0", True, "0", "strict"),
    ("First 12 then 7", "12", False, "7", "flexible"),
]


@pytest.mark.parametrize(("response", "gold", "correct", "pred", "rule"), CASES)
def test_grade_edge_cases_table(response, gold, correct, pred, rule):
    g = grade(response, gold)
    assert (g.correct, g.pred, g.rule) == (correct, pred, rule)


def test_strict_rule_wins_over_a_later_number():
    g = grade("The answer is 18, which is 2 more than 16", "18")
    assert g.correct and g.rule == "strict"


def test_every_test_gold_solution_rendered_as_cot_grades_correct():
    task = GSM8KTask.from_dir(DATA / "gsm8k")
    questions = task.questions()
    assert len(questions) == 1319
    wrong = [q.index for q in questions if not task.grade(to_cot(q.solution), q).correct]
    assert wrong == []
    rules = {task.grade(to_cot(q.solution), q).rule for q in questions}
    assert rules == {"strict"}


def test_fewshot_exemplar_answers_grade_correct_against_their_own_numbers():
    task = GSM8KTask.from_dir(DATA / "gsm8k")
    golds = ["6", "5", "39", "8", "9", "29", "33", "8"]
    assert [grade(ex["answer"], g).correct for ex, g in zip(task.exemplars, golds)] == [True] * 8
