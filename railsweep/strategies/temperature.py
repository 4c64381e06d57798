"""Temperature: M_co sampled at its own temperature ``tau`` instead of the readout's (the "truth serum").

Sampling hotter divides every logit gap by ``tau`` and can knock a memorised trajectory off its rail
(alpha_eff ~ alpha / tau). The m readout samples are drawn at ``tau`` with Identity's per-question seeds
(``tau = 0``: one greedy decode, counted m times), so ``tau=None`` or the readout temperature reproduces
Identity sample for sample. M_cl stays at the readout temperature (0.7 in the paper presets); for a reference
at ``tau``, run Identity at readout temperature ``tau``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from railsweep.errors import ConfigError
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
class TemperatureConfig:
    """tau: the sampling temperature of the model under evaluation (>= 0, finite; 0 = greedy;
    None = the readout temperature, i.e. Identity)."""

    tau: float | None = 1.0
    switched_off: ClassVar[dict[str, Any]] = {"tau": None}  # the readout's own temperature

    def __post_init__(self) -> None:
        t = self.tau
        if t is None:
            return
        if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t) or t < 0:
            raise ConfigError(
                f"temperature tau must be a finite number >= 0 (0 = greedy) or null, got tau={t!r}"
            )


def _label(config: TemperatureConfig) -> str:
    """One row per tau (None: the readout temperature)."""
    return f"Temperature tau={'readout' if config.tau is None else config.tau}"


@register("temperature", TemperatureConfig, display="Temperature", label=_label)  # in no paper table
class Temperature(StrategyBase):
    def _at_tau(self, settings: DecodeSettings) -> DecodeSettings:
        """``settings`` at the temperature the samples are drawn at."""
        tau = settings.temperature if self.config.tau is None else float(self.config.tau)
        return dataclasses.replace(settings, temperature=tau)

    def run(self, ctx: EvalContext, questions: Sequence[Question]) -> list[QuestionOutcome]:
        # same salt as Identity: at the readout temperature the samples are Identity's
        return sample_and_grade(dataclasses.replace(ctx, settings=self._at_tau(ctx.settings)), questions)

    def decodes(self, settings: DecodeSettings) -> int:
        return sampled_per_question(self._at_tau(settings))
