"""What a task is: questions, a prompt format, stop strings and a grader."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, get_args

GradeRule = Literal["strict", "flexible", "none"]
# How a GSM8K response's answer is read (railsweep.tasks.answers.gsm8k_rules).
AnswerRule = Literal["final", "first", "lm_eval"]
ANSWER_RULES: tuple[str, ...] = get_args(AnswerRule)
DEFAULT_ANSWER_RULE = "final"
# What a gold answer is: a GSM8K number or a MATH-style LaTeX answer in \boxed{} (answers.math_rules).
AnswerType = Literal["numeric", "math"]
ANSWER_TYPES: tuple[str, ...] = get_args(AnswerType)
DEFAULT_ANSWER_TYPE = "numeric"
RULES_BY_TYPE: dict[str, tuple[str, ...]] = {"numeric": ANSWER_RULES, "math": ("final", "first")}
# The shipped task file that declares the built-in GSM8K task (railsweep/tasks/builtin/gsm8k.yaml).
DEFAULT_TASK = "gsm8k"
# The CoT exemplars a MATH-style task prompts with unless given others (four solutions ending in \boxed{}).
MATH_FEWSHOT = Path(__file__).with_name("math_fewshot.json")


@dataclass(frozen=True)
class Question:
    index: int  # 0-based index in the evaluation split (GSM8K: line number in test.jsonl)
    question: str
    solution: str  # worked solution in the source format (GSM8K: ends with "#### N")
    gold: str  # final answer: GSM8K normalised (commas removed), e.g. "1234"; MATH its last \boxed{} as written
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
