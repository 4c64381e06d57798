"""What a task file declares about reading and grading answers: extraction steps, graders, answer rules.

Plain frozen records, kept apart from the judging code (:mod:`railsweep.tasks.answers.file_rules`, which imports
sympy for the math grader) so that checking a task file, and a cell that names one, loads no sympy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from railsweep.tasks.answers.lm_eval_gsm8k import regex_filter
from railsweep.tasks.answers.math_boxed import answer_is, boxed_answers

GRADER_TYPES = ("numeric", "string", "math")
SELECTS = ("last", "first")
STEP_KINDS = ("regex", "boxed", "answer_is")


@dataclass(frozen=True)
class Step:
    """One extraction step: ``kind`` (:data:`STEP_KINDS`), which match (``select``), the compiled regex (read as
    lm-eval's ``regex`` filter reads it)."""

    kind: str
    select: str
    pattern: re.Pattern[str] | None

    def find(self, text: str) -> str | None:
        if self.kind == "boxed":
            boxes = boxed_answers(text)
            return (boxes[-1] if self.select == "last" else boxes[0]) if boxes else None
        if self.kind == "answer_is":
            return answer_is(text, "final" if self.select == "last" else "first")
        return regex_filter(self.pattern, text, -1 if self.select == "last" else 0)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Grader:
    """How an extracted answer is compared with the gold one (:mod:`railsweep.tasks.answers.file_rules`, step 3)."""

    type: str
    tolerance: float = 0.0
    thousands_separator: str = ","
    ignore_case: bool = False
    regexes_to_ignore: tuple[re.Pattern[str], ...] = ()

    def gold(self, target: str) -> str:
        """The gold answer as a cell records it: a numeric target without its thousands separators."""
        target = target.strip()
        if self.type == "numeric" and self.thousands_separator:
            return target.replace(self.thousands_separator, "")
        return target


@dataclass(frozen=True)
class Extractor:
    """One answer rule: extra cut strings, the ordered steps, the grader."""

    steps: tuple[Step, ...]
    cut: tuple[str, ...]
    grader: Grader
