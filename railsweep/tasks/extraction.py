"""Reading and grading an answer as a task file declares it: ordered extraction steps, then one grader.

Steps of :meth:`Extractor.grade` (the same structure as railsweep's coded rules and lm-evaluation-harness's
regex filters):

1. **cut** the response at its first stop string (the task's ``stop``, then the rule's own ``cut``);
2. **extract**: try each step in order; the first that finds something gives the answer. A ``regex``
   step takes the first or last match (``select``) and, as lm-eval's ``regex`` filter does, its only
   group, or the first non-empty group when there are several, or the whole match when there are none,
   stripped. ``boxed`` takes the first/last well-formed ``\\boxed{}`` and ``answer_is`` the first/last
   "The answer is X" (:mod:`railsweep.tasks.math_answers`). The first step counts as ``strict`` in a
   cell's table, any later one as ``flexible``; nothing found is ``none``;
3. **grade** with the rule's grader: ``numeric`` (thousands separators, ``$`` and whitespace removed, then
   compared as decimals, within ``tolerance``), ``string`` (lm-eval's ``exact_match``: each of
   ``regexes_to_ignore`` deleted in order from both sides, optionally lower-cased, then equal) or ``math``
   (:func:`railsweep.tasks.math_equiv.is_equiv`: normalised strings, then sympy).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from railsweep.tasks.base import Grade
from railsweep.tasks.grading import cut_at_stop
from railsweep.tasks.math_answers import answer_is, boxed_answers, strip_math
from railsweep.tasks.math_equiv import is_equiv

GRADER_TYPES = ("numeric", "string", "math")
SELECTS = ("last", "first")
STEP_KINDS = ("regex", "boxed", "answer_is")


@dataclass(frozen=True)
class Step:
    """One extraction step: ``kind`` (:data:`STEP_KINDS`), which match (``select``), the compiled regex."""

    kind: str
    select: str
    pattern: re.Pattern[str] | None

    def find(self, text: str) -> str | None:
        if self.kind == "boxed":
            boxes = boxed_answers(text)
            return (boxes[-1] if self.select == "last" else boxes[0]) if boxes else None
        if self.kind == "answer_is":
            return answer_is(text, "final" if self.select == "last" else "first")
        matches = list(self.pattern.finditer(text))  # type: ignore[union-attr]
        if not matches:
            return None
        m = matches[-1 if self.select == "last" else 0]
        groups = m.groups()
        if not groups:
            return m.group(0).strip()
        if len(groups) == 1:
            return (groups[0] or "").strip()
        hit = next((g for g in groups if g), None)
        return hit.strip() if hit is not None else None


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


def _canonical_number(d: Decimal) -> str:
    return "0" if d == 0 else format(d.normalize(), "f")


@dataclass(frozen=True)
class Grader:
    """How an extracted answer is compared with the gold one (module docstring, step 3)."""

    type: str
    tolerance: float = 0.0
    thousands_separator: str = ","
    ignore_case: bool = False
    regexes_to_ignore: tuple[re.Pattern[str], ...] = ()

    def gold(self, target: str) -> str:
        """The gold answer as a cell records it: a numeric target without its thousands separators."""
        target = target.strip()
        return target.replace(self.thousands_separator, "") if self.type == "numeric" and self.thousands_separator else target

    def _canonical_string(self, text: str) -> str:
        for pattern in self.regexes_to_ignore:
            text = pattern.sub("", text)
        return text.lower() if self.ignore_case else text

    def judge(self, pred: str, gold: str) -> tuple[str | None, bool]:
        """(the prediction as the cell records it, whether it is correct)."""
        if self.type == "math":
            return strip_math(pred), is_equiv(pred, gold)
        if self.type == "string":
            return pred, self._canonical_string(pred) == self._canonical_string(gold)
        got = normalize_numeric(pred, self.thousands_separator)
        if got is None:
            return None, False
        want = normalize_numeric(gold, self.thousands_separator)
        if want is None:
            return _canonical_number(got), _canonical_number(got) == gold.strip()
        close = got == want if self.tolerance == 0 else abs(got - want) <= Decimal(str(self.tolerance))
        return _canonical_number(got), close


@dataclass(frozen=True)
class Extractor:
    """One answer rule: extra cut strings, the ordered steps, the grader."""

    steps: tuple[Step, ...]
    cut: tuple[str, ...]
    grader: Grader

    def grade(self, response: str, gold: str, stop: tuple[str, ...]) -> Grade:
        text = cut_at_stop(cut_at_stop(response, stop), self.cut)
        for i, step in enumerate(self.steps):
            found = step.find(text)
            if found is None:
                continue
            pred, correct = self.grader.judge(found, gold)
            if pred is None:
                return Grade(correct=False, pred=None, rule="none")
            return Grade(correct=correct, pred=pred, rule="strict" if i == 0 else "flexible")
        return Grade(correct=False, pred=None, rule="none")
