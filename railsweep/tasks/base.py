"""What a task is: questions, a prompt format, stop strings and a grader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

GradeRule = Literal["strict", "flexible", "none"]


@dataclass(frozen=True)
class Question:
    index: int  # 0-based index in the evaluation split (GSM8K: line number in test.jsonl)
    question: str
    solution: str  # worked solution in the source format (GSM8K: ends with "#### N")
    gold: str  # final answer, normalised (commas removed), e.g. "1234" or "-3"
    leaked: bool | None = None  # whether M_co saw this question; None when unknown


@dataclass(frozen=True)
class Grade:
    correct: bool
    pred: str | None  # the extracted answer, normalised; None when no number was found
    rule: GradeRule  # which rule extracted it


class Task(Protocol):
    name: str
    stop: tuple[str, ...]

    def questions(self) -> Sequence[Question]: ...

    def prompt(self, question: Question) -> str: ...

    def grade(self, response: str, question: Question) -> Grade: ...
