"""MATH-style grading: ``\\boxed{}`` extraction, MATH's normalisation and sympy equivalence.

The equivalence table is hand-written: each row is (prediction, gold, expected verdict, what it pins).
"""

from __future__ import annotations

import random
import signal
import time

import pytest

from railsweep.errors import ConfigError
from railsweep.tasks.answers import math_equiv
from railsweep.tasks.answers.latex_sympy import LatexError, parse_latex
from railsweep.tasks.answers.math_boxed import answer_is, boxed_answers, gold_answer, strip_math
from railsweep.tasks.answers.math_equiv import is_equiv
from railsweep.tasks.answers.math_rules import extract_math, grade_math

EQUIVALENCE = [
    # fractions and their spellings
    (r"\frac{1}{2}", r"\frac12", True, "frac shorthand"),
    (r"\dfrac{3}{4}", r"\frac{3}{4}", True, "dfrac is frac"),
    (r"\tfrac{3}{4}", r"\frac34", True, "tfrac is frac"),
    ("3/4", r"\frac{3}{4}", True, "a/b is a fraction"),
    (r"\frac{2}{4}", r"\frac{1}{2}", True, "unreduced fraction"),
    (r"\frac{1}{2}", r"\frac{1}{3}", False, "different fractions"),
    (r"\frac{-1}{2}", r"-\frac{1}{2}", True, "sign inside or outside"),
    # decimals against exact forms
    ("0.5", r"\frac12", True, "0.5 is one half"),
    (".5", r"\frac{1}{2}", True, "leading dot decimal"),
    ("0.75", r"\frac{3}{4}", True, "decimal equals fraction"),
    (r"\frac{1}{3}", "0.33", False, "near miss beyond tolerance"),
    (r"\frac{1}{3}", "0.3333333", True, "decimal within relative 1e-6"),
    ("2.5", "2.50", True, "trailing zero"),
    ("2.5", "2.6", False, "different decimals"),
    ("3.14", r"\pi", False, "pi is not 3.14"),
    ("3.14159265", r"\pi", True, "pi to nine digits"),
    # roots
    (r"\sqrt{2}/2", r"\frac{\sqrt2}{2}", True, "sqrt over two"),
    (r"\frac{1}{\sqrt{2}}", r"\frac{\sqrt{2}}{2}", True, "rationalised denominator"),
    (r"2\sqrt{3}", r"\sqrt{12}", True, "simplified radical"),
    (r"\sqrt{8}", r"3\sqrt{2}", False, "wrong radical coefficient"),
    (r"\sqrt[3]{27}", "3", True, "cube root"),
    # pi
    (r"\frac{\pi}{2}", r"\pi/2", True, "pi over two"),
    (r"2\pi", r"\pi \cdot 2", True, "pi product order"),
    (r"\frac{\pi}{3}", r"\frac{\pi}{6}", False, "different multiples of pi"),
    # integers, negatives, thousands separators
    ("-3", r"-\frac{6}{2}", True, "negative integer"),
    ("-3", "3", False, "sign matters"),
    ("1,000", "1000", True, "thousands separator"),
    ("1{,}000", "1000", True, "braced thousands separator"),
    ("12,345,678", "12345678", True, "several separators"),
    ("1,000", "100", False, "separator is not a decimal"),
    ("5.", "5", True, "trailing period"),
    (r"2^{10}", "1024", True, "power"),
    ("5!", "120", True, "factorial"),
    # units, degrees, percents, dollars, text
    (r"30^\circ", "30", True, "degrees"),
    (r"30^{\circ}", "30", True, "braced degrees"),
    (r"10\%", "10", True, "percent"),
    (r"\$5", "5", True, "dollar sign"),
    (r"\$5.00", "5", True, "dollars and cents"),
    (r"5\text{ cm}", "5", True, "text unit"),
    (r"12 \text{ inches}", "12", True, "spaced text unit"),
    (r"5\text{ cm}", "6", False, "unit does not rescue a wrong number"),
    (r"\text{(A)}", "(A)", True, "text choice"),
    (r"\text{(A)}", r"\text{(B)}", False, "different choice"),
    (r"x = 3", "3", True, "x= prefix"),
    (r"\left( 1, 2 \right)", "(1,2)", True, "left right and spaces"),
    # expressions
    ("2x+1", "1+2x", True, "commuted sum"),
    ("x^2-1", "(x-1)(x+1)", True, "factored form"),
    ("2x+1", "2x-1", False, "different expression"),
    ("2x", "2y", False, "different variable"),
    (r"\frac{x}{2}", "0.5x", True, "decimal coefficient"),
    # tuples, intervals, sets, lists
    ("(1,2)", r"\left(1, 2\right)", True, "tuple spacing"),
    ("(1,2)", "(2,1)", False, "tuple order matters"),
    (r"(\frac12, 3)", "(0.5,3)", True, "tuple elements compared mathematically"),
    (r"(-\infty, 3]", r"(-\infty,3]", True, "interval"),
    ("(1,2)", "[1,2)", False, "open vs half-open interval"),
    (r"[0, \frac{1}{2})", "[0,0.5)", True, "interval with fraction"),
    (r"(-\infty,0)\cup(1,\infty)", r"(-\infty, 0) \cup (1, \infty)", True, "interval union"),
    (r"(-\infty,0)\cup(1,\infty)", r"(-\infty,0)\cup[1,\infty)", False, "union with other bracket"),
    (r"\{1,2\}", r"\{2,1\}", True, "set order ignored"),
    ("1, 2", "2, 1", True, "list of solutions order ignored"),
    ("1, 2", "1, 3", False, "list with a wrong element"),
    ("1,2,3", "1,2", False, "list length differs"),
    # malformed or unreadable input grades False and never raises
    (r"\frac{1}{", "1", False, "unclosed brace"),
    (r"\sqrt{", r"\sqrt{2}", False, "unclosed sqrt"),
    ("}{", "1", False, "stray braces"),
    (r"\frac{1}{0}", "1", False, "division by zero"),
    (r"2^{100000}", "1", False, "huge exponent is refused not computed"),
    (r"((2^{999})^{999})^{999}", "1", False, "tower of powers is refused not computed"),
    (r"(999!)!", "1", False, "huge factorial is refused not computed"),
    (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", "1", False, "matrix against number"),
    ("", "1", False, "empty prediction"),
    ("banana", "5", False, "words"),
    (r"\frac{1}{2}", "", False, "empty gold"),
]


@pytest.mark.parametrize("pred,gold,expected,what", EQUIVALENCE, ids=[row[3] for row in EQUIVALENCE])
def test_equivalence_table(pred, gold, expected, what):
    assert is_equiv(pred, gold) is expected
    assert is_equiv(gold, pred) is expected  # equivalence is symmetric


def test_equivalence_table_has_fifty_hand_written_pairs_of_both_kinds():
    assert len(EQUIVALENCE) >= 50
    assert sum(row[2] for row in EQUIVALENCE) >= 20 and sum(not row[2] for row in EQUIVALENCE) >= 20


def test_none_is_never_equal():
    assert is_equiv(None, "1") is False and is_equiv("1", None) is False and is_equiv(None, None) is False


def test_last_box_with_nested_braces_is_read():
    text = r"First \boxed{2}, then $\boxed{\frac{\sqrt{3}}{2}}$."
    assert boxed_answers(text) == ["2", r"\frac{\sqrt{3}}{2}"]


def test_fbox_and_brace_less_box_are_read():
    assert boxed_answers(r"so \fbox{7} and $\boxed 5$") == ["7", "5"]


def test_unclosed_box_is_not_an_answer():
    assert boxed_answers(r"\boxed{3} then \boxed{\frac{1}{2}") == ["3"]


def test_gold_is_the_last_box_of_the_solution():
    assert gold_answer(r"We get $\boxed{1}$ wrongly; in fact $\boxed{\frac{1}{2}}$.") == r"\frac{1}{2}"
    assert gold_answer("no box here") is None


def test_answer_is_reads_inline_math_and_stops_at_the_sentence_end():
    assert answer_is("Final Answer: The final answer is $\\frac{1}{2}$. I hope it is correct.") == r"\frac{1}{2}"
    assert answer_is("So the answer is 0.5. Done.") == "0.5"
    assert answer_is("The answer is 3. Then the answer is 4.", "first") == "3"
    assert answer_is("no answer") is None


def test_final_rule_reads_the_last_box_and_first_the_first():
    text = r"I guess \boxed{3}. Checking: the answer is \boxed{4}."
    assert extract_math(text, rule="final") == ("4", "strict")
    assert extract_math(text, rule="first") == ("3", "strict")


def test_answer_is_counts_only_when_there_is_no_box():
    assert extract_math(r"The answer is 7. \boxed{8}") == ("8", "strict")
    assert extract_math("The answer is $\\frac{7}{2}$.") == (r"\frac{7}{2}", "flexible")
    assert extract_math("I cannot tell.") == (None, "none")


def test_text_after_the_stop_string_is_not_graded():
    g = grade_math("The sum is 9.\n\nProblem: next one \\boxed{5}", "5")
    assert (g.correct, g.pred, g.rule) == (False, None, "none")
    assert grade_math(r"Adding, \boxed{0.5}", r"\frac{1}{2}").correct is True


def test_grade_records_the_normalised_prediction_and_the_step():
    g = grade_math(r"So $x = \boxed{\dfrac{1}{2}}$", r"\frac12")
    assert (g.correct, g.pred, g.rule) == (True, r"\frac{1}{2}", "strict")
    assert grade_math("nothing", "1").pred is None


def test_lm_eval_rule_is_refused_for_math_answers():
    with pytest.raises(ConfigError, match="answer_rule='lm_eval'"):
        extract_math(r"\boxed{1}", rule="lm_eval")


@pytest.mark.parametrize(
    "text",
    [r"\frac{1}{", "((1)", r"\sqrt", "1++", r"\unknown{3}", "x^", "|1", r"\frac{1}{2}}", "9" * 500],
)
def test_malformed_latex_raises_latex_error_in_the_reader(text):
    with pytest.raises(LatexError):
        parse_latex(text)


def test_reader_makes_decimals_exact_and_flags_them():
    parsed = parse_latex("0.25")
    assert parsed.expr == parse_latex(r"\frac{1}{4}").expr and parsed.has_decimal
    assert not parse_latex(r"\frac14").has_decimal


def test_superscript_without_braces_takes_one_digit():
    assert parse_latex("2^34").expr == 8 * 4


def test_strip_math_follows_the_reference_steps():
    assert strip_math(r"\left(\dfrac12, 5^\circ\right).") == r"(\frac{1}{2},5)"
    assert strip_math(r"\$1{,}000") == "1000"
    assert strip_math("y = 7/3") == r"\frac{7}{3}"


def test_a_simplify_that_runs_past_the_timeout_is_interrupted_and_reads_as_not_equal(monkeypatch):
    finished = []

    def slow_simplify(expr):
        time.sleep(math_equiv.TIMEOUT_S * 5)
        finished.append(True)  # reached only when the timeout did not interrupt the sleep
        return 0

    monkeypatch.setattr(math_equiv.sympy, "simplify", slow_simplify)
    is_equiv.cache_clear()  # the table may have graded this pair already
    try:
        assert is_equiv("2x+1", "1+2x") is False
        assert finished == []
    finally:
        is_equiv.cache_clear()  # no verdict reached under the slow stand-in outlives this test


def test_the_timeout_re_arms_a_timer_the_caller_had_set():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *a: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        assert math_equiv._with_timeout(lambda: 7, 2.0) == 7
        remaining, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < remaining <= 0.5
        time.sleep(remaining + 0.2)
        assert fired == [True]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_random_latex_fragments_never_raise():
    rng = random.Random(0)
    pieces = ["\\frac", "\\sqrt", "{", "}", "(", ")", "[", "]", "^", "_", "1", "9", "0.5", "x", "\\pi", "-", "+",
              "/", ",", "\\cup", "\\infty", "!", "\\boxed{", "\\left(", "$", "\\text{ cm}", "=", " ", "|", "\\{"]  # fmt: skip
    for _ in range(400):  # each sympy call is bounded by math_equiv.TIMEOUT_S (the test above)
        a, b = ("".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(2))
        assert is_equiv(a, b) in (True, False)
        assert grade_math(a, b).correct in (True, False)
