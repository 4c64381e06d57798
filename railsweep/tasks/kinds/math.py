"""A MATH-style task: problems whose answers are LaTeX in ``\\boxed{}``, with a few-shot CoT prompt.

Data: ``<task_dir>/<split>.jsonl`` of ``{"problem", "solution"}`` (the MATH dataset's format); the gold is the
solution's LAST ``\\boxed{}`` (:mod:`railsweep.tasks.data.math_rows`). Prompt: ``"Problem: {problem}\\nSolution:
{solution}\\n\\n"`` per exemplar, then ``"Problem: {problem}\\nSolution:"``; the exemplars default to the four
shipped (:data:`~railsweep.tasks.base.MATH_FEWSHOT`), so a model answers in the format
:func:`~railsweep.tasks.answers.math_rules.grade_math` reads.
"""

from __future__ import annotations

from railsweep.tasks.answers.math_boxed import last_boxed
from railsweep.tasks.answers.math_rules import STOP, check_math_rule, grade_math
from railsweep.tasks.base import MATH_FEWSHOT
from railsweep.tasks.data.math_rows import load_math_exemplars, read_math_jsonl
from railsweep.tasks.kinds.coded import CodedTask


class MathTask(CodedTask):
    """MATH-style problems + the few-shot CoT prompt + the LaTeX-equivalence grader."""

    name = "math"
    stop = STOP
    answer_type = "math"
    fields = ("problem", "solution")
    labels = ("Problem", "Solution")
    check_rule = staticmethod(check_math_rule)
    read_rows = staticmethod(read_math_jsonl)
    load_exemplars = staticmethod(load_math_exemplars)
    gold = staticmethod(last_boxed)
    default_fewshot = staticmethod(lambda data_dir: MATH_FEWSHOT)
    grader = staticmethod(grade_math)
    to_chain = staticmethod(str)  # the solution as written, which is how the exemplars answer
