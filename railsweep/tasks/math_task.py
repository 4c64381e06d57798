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

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError, DataError
from railsweep.tasks.base import DEFAULT_ANSWER_RULE, MATH_FEWSHOT, Grade, Question
from railsweep.tasks.gsm8k import read_leak_split
from railsweep.tasks.math_answers import gold_answer
from railsweep.tasks.math_grading import RULES, STOP, grade_math
from railsweep.tasks.text import read_utf8


def _check_row(row: Any, where: str) -> dict[str, str]:
    """``row`` as ``{"problem", "solution"}`` if it is one with a boxed answer, else DataError at ``where``."""
    if not (isinstance(row, dict) and isinstance(row.get("problem"), str) and isinstance(row.get("solution"), str)):
        raise DataError(f"{where}: expected an object with string 'problem' and 'solution'")
    if gold_answer(row["solution"]) is None:
        raise DataError(f"{where}: 'solution' has no \\boxed{{...}} answer with balanced braces")
    return {"problem": row["problem"], "solution": row["solution"]}


def read_math_jsonl(path: str | Path) -> list[dict[str, str]]:
    """MATH-format rows; a blank or malformed line, or a solution without a box -> DataError with its line."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"MATH-style task file not found: {path}")
    rows = []
    with io.StringIO(read_utf8(path), newline=None) as f:
        for lineno, raw in enumerate(f, start=1):
            if not raw.strip():
                raise DataError(f"{path}:{lineno}: blank line (every line must be one JSON object)")
            try:
                row = json.loads(raw)
            except json.JSONDecodeError as e:
                raise DataError(f"{path}:{lineno}: not valid JSON ({e.msg})") from e
            rows.append(_check_row(row, f"{path}:{lineno}"))
    return rows


def load_math_exemplars(path: str | Path = MATH_FEWSHOT) -> list[dict[str, str]]:
    """The CoT exemplars: a non-empty JSON list of ``{"problem", "solution"}`` whose solutions end in a box."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"few-shot exemplar file not found: {path}")
    try:
        data = json.loads(read_utf8(path))
    except json.JSONDecodeError as e:
        raise DataError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from e
    if not isinstance(data, list) or not data:
        raise DataError(f"{path}: expected a non-empty JSON list of {{problem, solution}} objects")
    return [_check_row(ex, f"{path}: exemplar {i}") for i, ex in enumerate(data)]


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
