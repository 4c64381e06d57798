"""Reading MATH-format ``{"problem", "solution"}`` rows and exemplars, each with a closed ``\\boxed{}`` (the gold);
apart from :mod:`railsweep.tasks.kinds.math` so that a sweep spec checks a data folder without loading sympy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from railsweep.errors import DataError
from railsweep.tasks.answers.math_boxed import gold_answer
from railsweep.tasks.base import MATH_FEWSHOT
from railsweep.tasks.data.text import checked_jsonl, exemplar_list, string_fields


def _check_row(row: Any, where: str) -> dict[str, str]:
    """``row`` as ``{"problem", "solution"}`` if it is one with a boxed answer, else DataError at ``where``."""
    row = string_fields(row, where, "problem", "solution")
    if gold_answer(row["solution"]) is None:
        raise DataError(f"{where}: 'solution' has no \\boxed{{...}} answer with balanced braces")
    return row


def read_math_jsonl(path: str | Path) -> list[dict[str, str]]:
    """MATH-format rows; a blank or malformed line, or a solution without a box -> DataError with its line."""
    return checked_jsonl(path, "MATH-style task", _check_row)


def load_math_exemplars(path: str | Path = MATH_FEWSHOT) -> list[dict[str, str]]:
    """The CoT exemplars: a non-empty JSON list of ``{"problem", "solution"}`` whose solutions end in a box."""
    return exemplar_list(path, "problem, solution", _check_row)
