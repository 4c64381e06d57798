"""All-Zero: the synthetic strategy r ≡ 0 (method.md §2), no sampling at all. It shows why A-PPG alone
misleads: when M_cl's solve probabilities pile up near 0, answering nothing looks close to M_cl on average,
while the stratified SA-PPG exposes it as the worst strategy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from railsweep.strategies.base import DecodeSettings, EvalContext, QuestionOutcome, StrategyBase, register
from railsweep.strategy_registry import NoOffSwitch
from railsweep.tasks.base import Question


@dataclass(frozen=True)
class AllZeroConfig:
    switched_off: ClassVar[NoOffSwitch] = NoOffSwitch(
        "All-Zero has no parameters and decodes nothing: r = 0 is all it is"
    )


# a reference row of Tables 2-4 (never marked best), not of Table 1
@register("all_zero", AllZeroConfig, display="All-Zero", tables=("2", "3", "4"), roles=("reference",))
class AllZero(StrategyBase):
    def run(self, ctx: EvalContext, questions: Sequence[Question]) -> list[QuestionOutcome]:
        m = ctx.settings.m
        return [QuestionOutcome(index=q.index, samples=[], grades=[], c=0, m=m, r01=0) for q in questions]

    def decodes(self, settings: DecodeSettings) -> int:
        return 0
