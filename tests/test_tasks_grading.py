"""The GSM8K grader: cut at the stop string, the last "The answer is N", else the last number; numeric comparison."""

from __future__ import annotations

import pytest

from railsweep.tasks import GSM8KTask, grade, to_cot
from railsweep.tasks.data.shared_data import shared_data_dir

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
    ("The answer is 18. Later: the answer is 20.", "20", True, "20", "strict"),
    ("She makes 9 * 2 = $18.00 every day.", "18", True, "18", "flexible"),
    ("There are 1,000,000 grains", "1000000", True, "1000000", "flexible"),
    ("It costs $0.50 each", "0.5", True, "0.5", "flexible"),
    ("The answer is 0.", "0", True, "0", "strict"),
    ("First 12 then 7", "12", False, "7", "flexible"),
    # corrected and repeated answers: the final "The answer is N" counts
    ("I first thought the answer is 3, but 3 * 6 = 18. The answer is 18.", "18", True, "18", "strict"),
    ("The answer is 18. So the answer is 18.", "18", True, "18", "strict"),
    ("The answer is 18. Checking: 9 * 2 = 18. The answer is: $18.", "18", True, "18", "strict"),
    ("The answer is 20. No, 9 * 2 = 18, the answer is 18", "20", False, "18", "strict"),
    ("The answer is 18. So the answer is", "18", True, "18", "strict"),  # cut off by max_new_tokens
    # hedged answers
    ("The answer is 18 or maybe 20.", "18", True, "18", "strict"),
    ("The answer is probably 20, but 9 * 2 = 18, so the answer is 18.", "18", True, "18", "strict"),
    ("The answer is either 18 or 20.", "18", False, "20", "flexible"),
    ("I am not sure, maybe 17 or 18", "18", True, "18", "flexible"),
    # run-on samples: whatever follows the stop string "Q:" is not part of the response
    (
        "9 * 2 = 18. The answer is 18.\n\nQ: Tom has 3 apples.\nA: The answer is 3.",
        "18",
        True,
        "18",
        "strict",
    ),
    ("The answer is 18.\nQ: How many? The answer is 5.", "18", True, "18", "strict"),
    ("The answer is 18. Q: What is 2 + 3? The answer is 5.", "18", True, "18", "strict"),
    ("So 9 * 2 = 18\n\nQ: What is 2 + 3?\nA: The answer is 5.", "18", True, "18", "flexible"),
    ("So 9 * 2 = 18\n\nQ: What is 2 + 3?\nA: 2 + 3 = 5.", "18", True, "18", "flexible"),
    ("\n\nQ: What is 2 + 3?\nA: The answer is 5.", "5", False, None, "none"),
]


@pytest.mark.parametrize(("response", "gold", "correct", "pred", "rule"), CASES)
def test_grade_edge_cases_table(response, gold, correct, pred, rule):
    g = grade(response, gold)
    assert (g.correct, g.pred, g.rule) == (correct, pred, rule)


def test_the_cut_is_the_engines_cut_at_the_first_stop_string():
    from railsweep.tasks.answers.gsm8k_rules import cut_at_stop

    text = "The answer is 18.\n\nQ: next\nQ: again"
    assert cut_at_stop(text) == "The answer is 18."
    assert cut_at_stop(text, ("\nQ:",)) == "The answer is 18.\n"
    assert cut_at_stop(text, ()) == text
    assert grade("The answer is 18.\n\nQ: The answer is 5.", "5", stop=()).pred == "5"


def test_task_grades_with_its_own_stop_strings():
    task = GSM8KTask.from_dir(DATA / "gsm8k", limit=1)
    q = task.questions()[0]
    run_on = f"The answer is {q.gold}.\n\nQ: Tom has 3 apples.\nA: The answer is 3."
    assert task.stop == ("\n\nQ:", "\nQ:", "Q:")
    assert task.grade(run_on, q).correct


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
