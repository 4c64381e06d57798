"""The RailCap strategy: one greedy decode per question, then m samples with RailCap on.

The trajectory is the greedy completion's token ids as the engine produced them, so the n-gram index H speaks
the samples' token language. It ends where the answer ends (``trajectory="answer"``, :mod:`.trajectory`; EOS
kept); with ``"with_stop"`` RailCap also caps the step into the stop string and many samples run on to the
token limit (docs/miniworld.md has the measured difference).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from railsweep.engines.base import Sample
from railsweep.errors import ConfigError
from railsweep.interventions.railcap import DEFAULT_N, RailCapSpec, check_settings
from railsweep.strategies.base import (
    DecodeSettings,
    EvalContext,
    NoOffSwitch,
    QuestionOutcome,
    StrategyBase,
    greedy,
    register,
    sample_and_grade,
    sampled_per_question,
)
from railsweep.strategies.railcap.numbers import number_token_ids
from railsweep.strategies.railcap.trajectory import answer_ids
from railsweep.tasks.base import Question


@dataclass(frozen=True)
class RailCapConfig:
    """``n``: n-gram length (paper: 4); ``mode``: "cap" (tie with the runner-up) or "ban" (-inf);
    ``successor``: which successor of a repeated n-gram is capped ("last", "first" or "all");
    ``trajectory``: "answer" (the greedy completion up to its stop string) or "with_stop";
    ``stop_after_departure``: no caps after the sample's first actual departure (a step whose logits
    RailCap changed sampled none of its targets); ``spare_numbers``: never cap a number token
    (:mod:`.numbers`). Both are Table 4 rows, off by default (the paper's Algorithm 1)."""

    n: int = DEFAULT_N
    mode: str = "cap"
    successor: str = "last"
    trajectory: str = "answer"
    stop_after_departure: bool = False
    spare_numbers: bool = False
    # added after RailCap cells were evaluated: left out of the resolved params while off (cell ids hold)
    implicit_defaults: ClassVar[frozenset[str]] = frozenset({"stop_after_departure", "spare_numbers"})
    switched_off: ClassVar[NoOffSwitch] = NoOffSwitch(
        "every n >= 1 caps (or bans) a successor once the last n generated tokens repeat an n-gram of the "
        "greedy trajectory, so no setting is off; RailCap changes nothing only for a question whose "
        "trajectory has at most n tokens (an input, not a setting: tests/test_railcap_strategy.py)"
    )

    def __post_init__(self) -> None:
        check_settings(self.n, self.mode, self.successor)
        if self.trajectory not in ("answer", "with_stop"):
            raise ConfigError(f"RailCap trajectory must be 'answer' or 'with_stop', got {self.trajectory!r}")
        for name in ("stop_after_departure", "spare_numbers"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"RailCap {name} must be true or false, got {name}={getattr(self, name)!r}")

    def spec(self, trajectory: Sequence[int], spare: Sequence[int] = ()) -> RailCapSpec:
        """One question's spec, unchecked: its settings were checked with this config, once per cell."""
        return RailCapSpec(
            tuple(trajectory), n=self.n, mode=self.mode, successor=self.successor,  # type: ignore[arg-type]
            stop_after_departure=self.stop_after_departure, spare=tuple(spare), checked=True,
        )  # fmt: skip


def _label(c: RailCapConfig) -> str:
    """``RailCap n=4 cap``, then whatever differs from Algorithm 1's settings (Table 4's rows)."""
    tail = "" if c.successor == "last" else f" {c.successor}"
    if c.trajectory == "with_stop":
        tail += " with stop"
    if c.stop_after_departure:
        tail += " stop at departure"
    if c.spare_numbers:
        tail += " spare numbers"
    return f"RailCap n={c.n} {c.mode}{tail}"


def _is_main(c: RailCapConfig) -> bool:
    """Tables 1–3 show RailCap at its defaults."""
    return c == RailCapConfig()


@register(
    "railcap",
    RailCapConfig,
    display="RailCap",
    label=_label,
    tables=("1", "2", "3", "4"),
    main_row=_is_main,
    interventions=(RailCapSpec,),
    roles=("scatter",),
)
class RailCap(StrategyBase):
    def run(self, ctx: EvalContext, questions: Sequence[Question]) -> list[QuestionOutcome]:
        """1. greedy trajectories; 2. m samples per question with a RailCapSpec; 3. extras."""
        trajectories = greedy(ctx, questions)
        rails = [self._rail(ctx, g) for g in trajectories]
        by_index = {q.index: self.config.spec(r, self._spare(ctx, r)) for q, r in zip(questions, rails)}
        outcomes = sample_and_grade(ctx, questions, intervention=lambda q: by_index[q.index])
        for out, g in zip(outcomes, trajectories):
            out.greedy = g
            out.extras["trajectory_len"] = len(by_index[out.index].trajectory)
        return outcomes

    def decodes(self, settings: DecodeSettings) -> int:
        return 1 + sampled_per_question(settings)  # the greedy trajectory, then the m samples

    def _rail(self, ctx: EvalContext, g: Sample) -> list[int]:
        if self.config.trajectory == "with_stop":
            return g.token_ids
        return answer_ids(g, _tokenizer(ctx, "trajectory='answer'", " (use trajectory='with_stop')"))

    def _spare(self, ctx: EvalContext, rail: list[int]) -> tuple[int, ...]:
        wanted = self.config.spare_numbers
        return number_token_ids(_tokenizer(ctx, "spare_numbers=true"), rail) if wanted else ()


def _tokenizer(ctx: EvalContext, why: str, hint: str = ""):
    tokenizer = getattr(ctx.engine, "tokenizer", None)
    if tokenizer is None:
        engine = getattr(ctx.engine, "name", ctx.engine)
        raise ConfigError(f"RailCap {why} needs the engine's tokenizer; engine {engine!r} has none{hint}")
    return tokenizer
