"""What a task is: questions, a prompt format, stop strings and a grader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, get_args

GradeRule = Literal["strict", "flexible", "none"]
# How a GSM8K response's answer is read (railsweep.tasks.grading): the last "The answer is N" (default),
# the first one, or lm-evaluation-harness gsm8k_cot's own filters and comparison.
AnswerRule = Literal["final", "first", "lm_eval"]
ANSWER_RULES: tuple[str, ...] = get_args(AnswerRule)
DEFAULT_ANSWER_RULE = "final"


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
    rule: GradeRule  # which step of the answer rule extracted it


class Task(Protocol):
    name: str
    stop: tuple[str, ...]

    def questions(self) -> Sequence[Question]: ...

    def prompt(self, question: Question) -> str: ...

    def grade(self, response: str, question: Question) -> Grade: ...
