"""What the two coded task kinds, GSM8K (:mod:`~railsweep.tasks.kinds.gsm8k`) and MATH
(:mod:`~railsweep.tasks.kinds.math`), share.

Both read ``<data_dir>/<split>.jsonl`` and a few-shot exemplar file; a question's index is its 0-based line number
and ``leaked`` comes from a leak-split JSON (:mod:`railsweep.tasks.data.leak_split`). :class:`CodedTask` holds the
questions, the exemplars rendered once into the prompt's prefix (each kind's :meth:`CodedTask.render_prefix`) and
the files read; the functions below check a subset's arguments, number the rows into questions and list the files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError
from railsweep.tasks.base import Question
from railsweep.tasks.data.leak_split import read_leak_split


class CodedTask:
    """Questions + a few-shot prefix rendered once from the exemplars + the data files read."""

    name: str
    stop: tuple[str, ...]
    answer_type: str

    def __init__(self, questions: Sequence[Question], exemplars: Sequence[dict[str, str]], split: str = "test"):
        self._questions = tuple(questions)
        self.exemplars = tuple(exemplars)
        self.split = split
        self.prefix = self.render_prefix(self.exemplars)
        self.files: tuple[Path, ...] = ()  # data files read, for provenance checksums

    @staticmethod
    def render_prefix(exemplars: Iterable[dict[str, str]]) -> str:
        """The few-shot prefix the exemplars render to (each kind's prompt format)."""
        raise NotImplementedError

    def questions(self) -> Sequence[Question]:
        return self._questions


def check_subset(split: str, limit: int | None, leak_split: str | Path | None) -> None:
    """ConfigError unless ``limit`` is a positive integer or None and a leak split comes with the test split."""
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit must be a positive integer or None, got {limit!r}")
    if leak_split is not None and split != "test":
        raise ConfigError(f"leak_split indexes the test split; got split={split!r}")


def numbered_questions(
    rows: Sequence[dict[str, Any]],
    leak_split: str | Path | None,
    fields: tuple[str, str],
    gold: Callable[[str], str],
) -> list[Question]:
    """One :class:`Question` per row, indexed by its position: ``fields`` names the row's question and solution,
    ``gold`` reads the gold answer from the solution, and the leak split (when given) sets ``leaked``."""
    leaked = read_leak_split(leak_split, len(rows)) if leak_split is not None else None
    question, solution = fields
    return [
        Question(
            index=i,
            question=row[question],
            solution=row[solution],
            gold=gold(row[solution]),
            leaked=None if leaked is None else i in leaked,
        )
        for i, row in enumerate(rows)
    ]


def files_read(data_path: Path, fewshot: Path, leak_split: str | Path | None) -> tuple[Path, ...]:
    """The files a task built from a data folder read, for provenance checksums."""
    return tuple(p for p in (data_path, fewshot, Path(leak_split) if leak_split else None) if p)
