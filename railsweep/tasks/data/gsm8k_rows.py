"""Reading GSM8K data: the official ``{"question", "answer"}`` JSONL rows (each answer ending in ``#### N``)
and the CoT exemplar file."""

from __future__ import annotations

from pathlib import Path

from railsweep.errors import DataError
from railsweep.tasks.answers.gsm8k_solution import parse_gold
from railsweep.tasks.data.text import exemplar_list, json_lines


def load_exemplars(path: str | Path) -> list[dict[str, str]]:
    """The CoT exemplars: a JSON list of ``{"question", "answer"}`` (answers end "The answer is N.")."""
    data = exemplar_list(path, "question, answer")
    for i, ex in enumerate(data):
        if not (
            isinstance(ex, dict) and isinstance(ex.get("question"), str) and isinstance(ex.get("answer"), str)
        ):
            raise DataError(f"{path}: exemplar {i} is not an object with string 'question' and 'answer'")
    return [{"question": ex["question"], "answer": ex["answer"]} for ex in data]


def read_jsonl(path: str | Path) -> list[dict[str, str]]:
    """Official-format GSM8K rows ``{"question", "answer"}``; a malformed line -> DataError with its number."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"GSM8K file not found: {path}")
    rows = []
    for lineno, row in json_lines(path):
        if not (isinstance(row, dict) and isinstance(row.get("question"), str)):
            raise DataError(f"{path}:{lineno}: expected an object with string 'question' and 'answer'")
        if not isinstance(row.get("answer"), str) or "####" not in row["answer"]:
            raise DataError(f"{path}:{lineno}: 'answer' must be a solution string ending in '#### N'")
        try:
            parse_gold(row["answer"])
        except DataError as e:
            raise DataError(f"{path}:{lineno}: {e}") from e
        rows.append(row)
    return rows
