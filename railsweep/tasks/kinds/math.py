"""A MATH-style task: problems whose answers are LaTeX in ``\\boxed{}``, with a few-shot CoT prompt.

Data: ``<task_dir>/<split>.jsonl``, one ``{"problem": str, "solution": str}``
per line (the MATH dataset's format); the gold answer is the LAST ``\\boxed{}``
of the solution (:func:`~railsweep.tasks.answers.math_boxed.gold_answer`), and a
solution without one is refused with its line number. Question indices are
0-based line numbers; ``leaked`` comes from a leak-split JSON as for GSM8K.

Prompt: each exemplar as ``"Problem: {problem}\\nSolution: {solution}\\n\\n"``,
then ``"Problem: {problem}\\nSolution:"``. The exemplars (a JSON list of
``{"problem", "solution"}``, every solution ending in a box) default to the
four shipped in the package (:data:`~railsweep.tasks.base.MATH_FEWSHOT`), so a
model answers in the format the grader reads. Stop strings: a new
``"Problem:"`` (:data:`~railsweep.tasks.answers.math_rules.STOP`).

Grading: :func:`~railsweep.tasks.answers.math_rules.grade_math` under ``answer_rule``
``final`` (last box) or ``first`` (first box).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from railsweep.errors import ConfigError
from railsweep.tasks.answers.math_boxed import gold_answer
from railsweep.tasks.answers.math_rules import RULES, STOP, grade_math
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, MATH_FEWSHOT, Grade, Question
from railsweep.tasks.data.math_rows import load_math_exemplars, read_math_jsonl
from railsweep.tasks.kinds.coded import CodedTask, check_subset, files_read, numbered_questions


def render_math_prefix(exemplars: Iterable[dict[str, str]]) -> str:
    """The few-shot prefix: ``"Problem: {problem}\\nSolution: {solution}\\n\\n"`` per exemplar."""
    return "".join(f"Problem: {ex['problem']}\nSolution: {ex['solution']}\n\n" for ex in exemplars)


def _gold(solution: str) -> str:
    return gold_answer(solution) or ""


class MathTask(CodedTask):
    """MATH-style problems + the few-shot CoT prompt + the LaTeX-equivalence grader (implements ``Task``)."""

    name = "math"
    stop = STOP
    answer_type = "math"
    render_prefix = staticmethod(render_math_prefix)

    def __init__(
        self,
        questions: Sequence[Question],
        exemplars: Sequence[dict[str, str]],
        split: str = "test",
        answer_rule: str = DEFAULT_ANSWER_RULE,
    ):
        if answer_rule not in RULES:
            raise ConfigError(
                f"a MATH-style task reads answers under {', '.join(RULES)}, got answer_rule={answer_rule!r}"
            )
        self.answer_rule = answer_rule
        super().__init__(questions, exemplars, split)

    @classmethod
    def from_dir(
        cls,
        data_dir: str | Path,
        split: str = "test",
        fewshot_path: str | Path | None = None,
        limit: int | None = None,
        leak_split: str | Path | None = None,
        answer_rule: str = DEFAULT_ANSWER_RULE,
    ) -> MathTask:
        """Read ``<data_dir>/<split>.jsonl`` and the exemplars (default: the package's four)."""
        check_subset(split, limit, leak_split)
        data_path = Path(data_dir) / f"{split}.jsonl"
        fewshot = Path(fewshot_path) if fewshot_path is not None else MATH_FEWSHOT
        questions = numbered_questions(read_math_jsonl(data_path), leak_split, ("problem", "solution"), _gold)[:limit]
        task = cls(questions, load_math_exemplars(fewshot), split=split, answer_rule=answer_rule)
        task.files = files_read(data_path, fewshot, leak_split)
        return task

    def prompt(self, question: Question) -> str:
        return f"{self.prefix}Problem: {question.question}\nSolution:"

    def grade(self, response: str, question: Question) -> Grade:
        return grade_math(response, question.gold, self.stop, self.answer_rule)

    def gold_chain(self, question: Question) -> str:
        """The gold chain of thought: the MATH solution as written, which is how the exemplars answer (the
        dynamics step teacher-forces it after the prompt and counts verbatim reproductions of it)."""
        return question.solution
