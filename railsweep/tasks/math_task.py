"""A MATH-style task: problems whose answers are LaTeX in ``\\boxed{}``, with a few-shot CoT prompt.

Data: ``<task_dir>/<split>.jsonl``, one ``{"problem": str, "solution": str}``
per line (the MATH dataset's format); the gold answer is the LAST ``\\boxed{}``
of the solution (:func:`~railsweep.tasks.math_answers.gold_answer`), and a
solution without one is refused with its line number. Question indices are
0-based line numbers; ``leaked`` comes from a leak-split JSON as for GSM8K.

Prompt: each exemplar as ``"Problem: {problem}\\nSolution: {solution}\\n\\n"``,
then ``"Problem: {problem}\\nSolution:"``. The exemplars (a JSON list of
``{"problem", "solution"}``, every solution ending in a box) default to the
four shipped in the package (:data:`~railsweep.tasks.base.MATH_FEWSHOT`), so a
model answers in the format the grader reads. Stop strings: a new
``"Problem:"`` (:data:`~railsweep.tasks.math_grading.STOP`).

Grading: :func:`~railsweep.tasks.math_grading.grade_math` under ``answer_rule``
``final`` (last box) or ``first`` (first box).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from railsweep.errors import ConfigError
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, MATH_FEWSHOT, Grade, Question
from railsweep.tasks.gsm8k import read_leak_split
from railsweep.tasks.math_answers import gold_answer
from railsweep.tasks.math_data import load_math_exemplars, read_math_jsonl
from railsweep.tasks.math_grading import RULES, STOP, grade_math

__all__ = ["MathTask", "load_math_exemplars", "read_math_jsonl", "render_math_prefix"]


def render_math_prefix(exemplars: Sequence[dict[str, str]]) -> str:
    """The few-shot prefix: ``"Problem: {problem}\\nSolution: {solution}\\n\\n"`` per exemplar."""
    return "".join(f"Problem: {ex['problem']}\nSolution: {ex['solution']}\n\n" for ex in exemplars)


class MathTask:
    """MATH-style problems + the few-shot CoT prompt + the LaTeX-equivalence grader (implements ``Task``)."""

    name = "math"
    stop = STOP
    answer_type = "math"

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
        self._questions = tuple(questions)
        self.exemplars = tuple(exemplars)
        self.split = split
        self.prefix = render_math_prefix(self.exemplars)
        self.files: tuple[Path, ...] = ()  # data files read, for provenance checksums

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
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ConfigError(f"limit must be a positive integer or None, got {limit!r}")
        if leak_split is not None and split != "test":
            raise ConfigError(f"leak_split indexes the test split; got split={split!r}")
        data_path = Path(data_dir) / f"{split}.jsonl"
        fewshot = Path(fewshot_path) if fewshot_path is not None else MATH_FEWSHOT
        rows = read_math_jsonl(data_path)
        leaked = read_leak_split(leak_split, len(rows)) if leak_split is not None else None
        questions = [
            Question(
                index=i,
                question=row["problem"],
                solution=row["solution"],
                gold=gold_answer(row["solution"]) or "",
                leaked=None if leaked is None else i in leaked,
            )
            for i, row in enumerate(rows)
        ][:limit]
        task = cls(questions, load_math_exemplars(fewshot), split=split, answer_rule=answer_rule)
        task.files = tuple(p for p in (data_path, fewshot, Path(leak_split) if leak_split else None) if p)
        return task

    def questions(self) -> Sequence[Question]:
        return self._questions

    def prompt(self, question: Question) -> str:
        return f"{self.prefix}Problem: {question.question}\nSolution:"

    def grade(self, response: str, question: Question) -> Grade:
        return grade_math(response, question.gold, self.stop, self.answer_rule)

    def gold_chain(self, question: Question) -> str:
        """The gold chain of thought: the MATH solution as written, which is how the exemplars answer (the
        dynamics step teacher-forces it after the prompt and counts verbatim reproductions of it)."""
        return question.solution
