"""LNE-Blocking (Hou et al., Findings EMNLP 2025): block the first n top-1 tokens, n set by the greedy entropy.

From the paper's equations (the official code was unavailable; baselines.md §2). Per question:

1. pass 1: greedy decode with the full-vocabulary entropy (nats) of every generated step, the stop step
   included (``include_stop_step``) → LNE = mean entropy (Eq. 1);
2. n = clip(round_mode(T_task · (1 − LNE/β)), 0, T_task) (Eq. 10; β=2, T_task=7 for GSM8K; rounding
   [INFERRED] floor); ``fixed_n`` gives the paper's "Fixed Blocking k" instead; with ``xi`` set, only
   questions the detector flags are blocked (LNE <= ξ; [INFERRED] default: no gating);
3. pass 2 bans the *current* top-1 token at each of the first n generated positions (:class:`BanTopSpec`):
   ``readout="sampling"`` (default, railsweep's extension §2.8) draws m samples at the context's
   temperature; ``"greedy"`` (official) one blocked greedy decode, its 0/1 correctness replicated m times.

With n = 0 the sampling readout draws exactly Identity's samples. Not offered: the less likely reading that
bans pass 1's token at each position (§2.4).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from railsweep.errors import ConfigError
from railsweep.interventions import BanTopSpec
from railsweep.strategies.base import (
    DecodeSettings,
    EvalContext,
    QuestionOutcome,
    StrategyBase,
    greedy,
    greedy_readout,
    register,
    sample_and_grade,
    sampled_per_question,
)
from railsweep.tasks.base import Question

Rounding = Literal["floor", "round", "ceil"]
_EPS = 1e-9  # absorb float error on exact integers, e.g. 7 * (1 - 0.5714.../2)


@dataclass(frozen=True)
class LNEBlockingConfig:
    """Defaults: the paper's GSM8K setting plus baselines.md §2.11 choices.
    beta: normalisation of LNE (Eq. 10), LNE̅ = 1 − LNE/beta.
    t_task: maximal number of blocked positions (4 for code, 7 for GSM8K).
    rounding: how T_task·LNE̅ becomes an integer: "floor" (default), "round" (half up) or "ceil".
    readout: "sampling" (m samples with the ban) or "greedy" (official blocked greedy, m=1 replicated).
    include_stop_step: count the final step (EOS or stop string) in the LNE mean.
    fixed_n: block exactly this many positions regardless of LNE ("Fixed Blocking k"); None = use LNE.
    xi: detection threshold; when set, n = 0 for questions with LNE > xi. None = no gating.
    """

    beta: float = 2.0
    t_task: int = 7
    rounding: Rounding = "floor"
    readout: Literal["sampling", "greedy"] = "sampling"
    include_stop_step: bool = True
    fixed_n: int | None = None
    xi: float | None = None
    switched_off: ClassVar[dict[str, Any]] = {"t_task": 0}  # blocks no position

    def __post_init__(self) -> None:
        if not self.beta > 0:
            raise ConfigError(f"LNE-blocking beta must be > 0, got beta={self.beta}")
        if isinstance(self.t_task, bool) or not isinstance(self.t_task, int) or self.t_task < 0:
            raise ConfigError(f"LNE-blocking t_task must be an integer >= 0, got t_task={self.t_task!r}")
        if self.rounding not in ("floor", "round", "ceil"):
            raise ConfigError(f"LNE-blocking rounding must be floor, round or ceil, got {self.rounding!r}")
        if self.readout not in ("sampling", "greedy"):
            raise ConfigError(f"LNE-blocking readout must be 'sampling' or 'greedy', got {self.readout!r}")
        if self.fixed_n is not None and (not isinstance(self.fixed_n, int) or self.fixed_n < 0):
            raise ConfigError(f"LNE-blocking fixed_n must be None or an integer >= 0, got {self.fixed_n!r}")


def lne(entropies: Sequence[float], finish_reason: str, include_stop_step: bool = True) -> float:
    """Eq. 1: the mean per-step entropy of the greedy decode (nats); without ``include_stop_step``, less the
    stop step (unless it is the only one)."""
    h = list(entropies)
    if not h:
        raise ConfigError("LNE needs at least one generated step's entropy; the engine returned none")
    if not include_stop_step and finish_reason == "stop" and len(h) > 1:
        h = h[:-1]
    return math.fsum(h) / len(h)


def blocking_count(lne_value: float, beta: float = 2.0, t_task: int = 7, rounding: Rounding = "floor") -> int:
    """Eq. 10: n = clip(rounding(T_task · (1 − LNE/β)), 0, T_task)."""
    x = t_task * (1.0 - lne_value / beta)
    if rounding == "floor":
        n = math.floor(x + _EPS)
    elif rounding == "ceil":
        n = math.ceil(x - _EPS)
    else:
        n = math.floor(x + 0.5 + _EPS)
    return min(t_task, max(0, n))


@register("lne_blocking", LNEBlockingConfig, display="LNE-blocking", tables=("1", "2", "3"),
          interventions=(BanTopSpec,))
class LNEBlocking(StrategyBase):
    def _n(self, lne_value: float) -> int:
        c = self.config
        if c.xi is not None and lne_value > c.xi:
            return 0
        if c.fixed_n is not None:
            return c.fixed_n
        return blocking_count(lne_value, c.beta, c.t_task, c.rounding)

    def run(self, ctx: EvalContext, questions: Sequence[Question]) -> list[QuestionOutcome]:
        c = self.config
        if not ctx.engine.supports(BanTopSpec):
            raise ConfigError(f"engine {ctx.engine.name!r} does not implement BanTopSpec (LNE-blocking)")
        first = greedy(ctx, questions, return_entropy=True)
        lnes, counts = {}, {}
        for q, g in zip(questions, first):
            if g.entropies is None:
                raise ConfigError(
                    f"engine {ctx.engine.name!r} returned no entropies (SamplingSpec.return_entropy)"
                )
            lnes[q.index] = lne(g.entropies, g.finish_reason, c.include_stop_step)
            counts[q.index] = self._n(lnes[q.index])
        run_ctx = greedy_readout(ctx) if c.readout == "greedy" else ctx
        outcomes = sample_and_grade(run_ctx, questions, intervention=lambda q: BanTopSpec(counts[q.index]))
        for out, g in zip(outcomes, first):
            out.greedy = g
            out.extras.update({"lne": lnes[out.index], "n_blocked": counts[out.index]})
        return outcomes

    def decodes(self, settings: DecodeSettings) -> int:  # LNE's greedy decode, then the readout
        return 1 + sampled_per_question(settings, greedy=self.config.readout == "greedy")
