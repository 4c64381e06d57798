"""Reading MATH-format data: ``{"problem", "solution"}`` JSONL rows and few-shot exemplar files, each solution
with a closed ``\\boxed{}`` (the gold answer). Kept apart from :mod:`railsweep.tasks.kinds.math` (which
grades, and so imports sympy) so that a sweep spec can check a MATH-style data folder without the grader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from railsweep.errors import DataError
from railsweep.tasks.answers.math_boxed import gold_answer
from railsweep.tasks.base import MATH_FEWSHOT
from railsweep.tasks.data.text import exemplar_list, json_lines


def _check_row(row: Any, where: str) -> dict[str, str]:
    """``row`` as ``{"problem", "solution"}`` if it is one with a boxed answer, else DataError at ``where``."""
    if not (
        isinstance(row, dict) and isinstance(row.get("problem"), str) and isinstance(row.get("solution"), str)
    ):
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
    for lineno, row in json_lines(path):
        rows.append(_check_row(row, f"{path}:{lineno}"))
    return rows


def load_math_exemplars(path: str | Path = MATH_FEWSHOT) -> list[dict[str, str]]:
    """The CoT exemplars: a non-empty JSON list of ``{"problem", "solution"}`` whose solutions end in a box."""
    data = exemplar_list(path, "problem, solution")
    return [_check_row(ex, f"{path}: exemplar {i}") for i, ex in enumerate(data)]
