"""Reading GSM8K data: the official ``{"question", "answer"}`` JSONL rows (each answer ending in ``#### N``)
and the CoT exemplar file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from railsweep.errors import DataError
from railsweep.tasks.answers.gsm8k_solution import parse_gold
from railsweep.tasks.data.text import checked_jsonl, exemplar_list, string_fields


def load_exemplars(path: str | Path) -> list[dict[str, str]]:
    """The CoT exemplars: a JSON list of ``{"question", "answer"}`` (answers end "The answer is N.")."""
    return exemplar_list(path, "question, answer", lambda ex, where: string_fields(ex, where, "question", "answer"))


def _check_row(row: Any, where: str) -> dict[str, str]:
    if not (isinstance(row, dict) and isinstance(row.get("question"), str)):
        raise DataError(f"{where}: expected an object with string 'question' and 'answer'")
    if not isinstance(row.get("answer"), str) or "####" not in row["answer"]:
        raise DataError(f"{where}: 'answer' must be a solution string ending in '#### N'")
    try:
        parse_gold(row["answer"])
    except DataError as e:
        raise DataError(f"{where}: {e}") from e
    return row


def read_jsonl(path: str | Path) -> list[dict[str, str]]:
    """Official-format GSM8K rows ``{"question", "answer"}``; a malformed line -> DataError with its number."""
    return checked_jsonl(path, "GSM8K", _check_row)
