"""Reading and grading an answer as a task file declares it: ordered extraction steps, then one grader.

Steps of :func:`grade_with` (the structure of railsweep's coded rules and lm-evaluation-harness's filters):

1. **cut** the response at its first stop string (the task's ``stop``, then the rule's own ``cut``);
2. **extract**: the first step that finds something gives the answer (``Step.find``, as lm-eval's ``regex``
   filter or :mod:`~railsweep.tasks.answers.math_boxed` reads it); the first step counts as ``strict``, a later
   one as ``flexible``; nothing found is ``none``;
3. **grade**: ``numeric`` (thousands separators, ``$`` and whitespace removed, compared as decimals within
   ``tolerance``), ``string`` (lm-eval's ``exact_match``) or ``math`` (``math_equiv.is_equiv``).
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from railsweep.tasks.answers.file_rule_spec import Extractor, Grader
from railsweep.tasks.answers.gsm8k_rules import canonical_number, cut_at_stop
from railsweep.tasks.answers.lm_eval_gsm8k import exact_match
from railsweep.tasks.answers.math_boxed import strip_math
from railsweep.tasks.answers.math_equiv import is_equiv
from railsweep.tasks.base import Grade


def normalize_numeric(text: str, thousands_separator: str = ",") -> Decimal | None:
    """The number ``text`` writes ("$1,234.50", "\u22125") as a Decimal; None when it is not one."""
    s = "".join(text.split())  # whitespace never belongs to a number
    if thousands_separator:
        s = s.replace(thousands_separator, "")
    s = s.replace("$", "").replace("\u2212", "-").rstrip(".")  # a sentence period, not a decimal point
    try:
        d = Decimal(s)
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def judge(grader: Grader, pred: str, gold: str) -> tuple[str | None, bool]:
    """(the prediction as the cell records it, whether it is correct) under ``grader`` (step 3)."""
    if grader.type == "math":
        return strip_math(pred), is_equiv(pred, gold)
    if grader.type == "string":
        return pred, exact_match(pred, gold, grader.regexes_to_ignore, grader.ignore_case)
    got = normalize_numeric(pred, grader.thousands_separator)
    if got is None:
        return None, False
    want = normalize_numeric(gold, grader.thousands_separator)
    if want is None:
        return canonical_number(got), canonical_number(got) == gold.strip()
    close = got == want if grader.tolerance == 0 else abs(got - want) <= Decimal(str(grader.tolerance))
    return canonical_number(got), close


def grade_with(rule: Extractor, response: str, gold: str, stop: tuple[str, ...]) -> Grade:
    """Grade one response under one declared answer rule (module docstring, steps 1-3)."""
    text = cut_at_stop(cut_at_stop(response, stop), rule.cut)
    for i, step in enumerate(rule.steps):
        found = step.find(text)
        if found is None:
            continue
        pred, correct = judge(rule.grader, found, gold)
        if pred is None:
            return Grade(correct=False, pred=None, rule="none")
        return Grade(correct=correct, pred=pred, rule="strict" if i == 0 else "flexible")
    return Grade(correct=False, pred=None, rule="none")
