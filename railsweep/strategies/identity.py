"""Identity: M_co sampled with no intervention (the baseline every strategy is compared to)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from railsweep.strategies.base import (
    DecodeSettings,
    EvalContext,
    QuestionOutcome,
    StrategyBase,
    register,
    sample_and_grade,
    sampled_per_question,
)
from railsweep.tasks.base import Question


@dataclass(frozen=True)
class IdentityConfig:
    switched_off: ClassVar[dict[str, Any]] = {}  # Identity is the "off" every other strategy is compared to


@register(
    "identity", IdentityConfig, display="Identity", tables=("1", "2", "3"), roles=("scatter", "plain_samples")
)
class Identity(StrategyBase):
    def run(self, ctx: EvalContext, questions: Sequence[Question]) -> list[QuestionOutcome]:
        return sample_and_grade(ctx, questions)

    def decodes(self, settings: DecodeSettings) -> int:
        return sampled_per_question(settings)
