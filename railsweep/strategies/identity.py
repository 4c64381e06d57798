"""Identity: M_co sampled with no intervention (the baseline every strategy is compared to)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from railsweep.strategies.base import EvalContext, QuestionOutcome, register, sample_and_grade
from railsweep.tasks.base import Question


@dataclass(frozen=True)
class IdentityConfig:
    switched_off: ClassVar[dict[str, Any]] = {}  # Identity is the "off" every other strategy is compared to


@register("identity", IdentityConfig)
class Identity:
    def __init__(self, config: IdentityConfig | None = None):
        self.config = config or IdentityConfig()

    def run(self, ctx: EvalContext, questions: Sequence[Question]) -> list[QuestionOutcome]:
        return sample_and_grade(ctx, questions)
