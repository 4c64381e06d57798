"""The Strategy protocol, the registry, and the shared m-sample readout.

A strategy turns an :class:`EvalContext` and questions into one :class:`QuestionOutcome` per question
(samples, grades, the counts ``c`` of ``m`` the metrics use). Each lives in its own module with a frozen
config dataclass and one ``@register`` line (:mod:`railsweep.strategy_registry`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol

from railsweep.engines.base import Completion, Engine, Intervention, Request, Sample, SamplingSpec
from railsweep.strategy_registry import STRATEGIES, NoOffSwitch, register  # noqa: F401 (re-exported)
from railsweep.tasks.base import Grade, Question, Task


@dataclass(frozen=True)
class DecodeSettings:
    """The readout every strategy shares (paper: m=50, T=0.7); its values are checked where they came in."""

    m: int = 50
    temperature: float = 0.7
    max_new_tokens: int = 256
    seed: int = 0
    batch_size: int = 64  # prompts per engine call


@dataclass
class EvalContext:
    engine: Engine
    task: Task
    adapter: str | None  # the model under evaluation (M_co's adapter; None = base)
    settings: DecodeSettings
    clean_adapter: str | None = None  # M_cl of the same family/domain, for strategies that need it
    base_adapter: str | None = None  # the reference "base" model (None = adapter disabled)
    cache_dir: Path | None = None  # where strategies may cache expensive per-model artefacts
    progress: Callable[[int], None] | None = None  # called with the number of samples just decoded


@dataclass
class QuestionOutcome:
    index: int
    samples: list[Sample]
    grades: list[Grade]
    c: int  # correct responses counted toward the solve probability
    m: int  # denominator of the solve probability (TED: samples kept)
    r01: int  # 0/1 readout of the first sample (paper eq. 1); All-Zero: 0
    greedy: Sample | None = None
    extras: dict[str, float | int] = field(default_factory=dict)

    @property
    def solve_prob(self) -> float:
        return self.c / self.m if self.m > 0 else 0.0


class Strategy(Protocol):
    """``decodes``: responses the strategy decodes per question (greedy trajectories included), which
    ``railsweep sweep --dry-run`` prices a sweep with; a strategy with a one-off step shared by its cells
    (Shortcut's localisation) also has ``one_off``."""

    name: ClassVar[str]
    config: Any  # the frozen config dataclass instance

    def run(self, ctx: EvalContext, questions: Sequence[Question]) -> list[QuestionOutcome]: ...

    def decodes(self, settings: DecodeSettings) -> int: ...


class StrategyBase:
    """The constructor every strategy shares: ``config=None`` is its registered config class's defaults."""

    name: ClassVar[str]

    def __init__(self, config: Any = None):
        self.config = config if config is not None else STRATEGIES.classes(self.name)[1]()


def known_strategies() -> list[str]:
    return STRATEGIES.known()


def make_config(name: str, params: dict[str, Any] | None = None) -> Any:
    """Validate ``params`` against the strategy's config dataclass and build it."""
    return STRATEGIES.make_config(name, params)


def build_strategy(name: str, params: dict[str, Any] | None = None, *, config: Any = None) -> Strategy:
    """The strategy ``name`` at ``params``, or over ``config`` (a cell's ``strategy_config``, checked once already)."""
    return STRATEGIES.build(name, params, config=config)


def config_dict(config: Any) -> dict[str, Any]:
    """A config dataclass as a plain dict (the inverse of :func:`make_config`). Fields named in the class's
    ``implicit_defaults`` (options added after cells were evaluated) are left out while at their default, so
    that those cells keep their ids."""
    quiet = getattr(type(config), "implicit_defaults", frozenset())
    defaults = {f.name: f.default for f in dataclasses.fields(config)}
    return {
        k: (list(v) if isinstance(v, tuple) else v)
        for k, v in dataclasses.asdict(config).items()
        if not (k in quiet and v == defaults[k])
    }


def question_seed(seed: int, index: int, salt: str = "") -> int:
    """A stable 63-bit seed per (run seed, question, purpose), independent of batching."""
    h = hashlib.sha256(f"{seed}:{index}:{salt}".encode()).digest()
    return int.from_bytes(h[:8], "little") & ((1 << 63) - 1)


def decode(
    ctx: EvalContext,
    questions: Sequence[Question],
    *,
    n: int,
    temperature: float,
    salt: str,
    intervention: Callable[[Question], Intervention | None] | None = None,
    return_entropy: bool = False,
) -> list[Completion]:
    """Every question's prompt in batches (:func:`_job_size`), one engine call each; on a sweep engine
    (``generate_shares``: :mod:`railsweep.sweep.run.sharing`) idle engines decode some, with the same
    completions (seeds are per question, not per batch)."""
    s = ctx.settings

    def request(q: Question) -> Request:
        seed = question_seed(s.seed, q.index, salt)
        sampling = SamplingSpec(n, temperature, s.max_new_tokens, ctx.task.stop, seed, return_entropy)
        return Request(ctx.task.prompt(q), sampling, ctx.adapter, intervention(q) if intervention else None)

    size = _job_size(ctx, n)
    jobs = [[request(q) for q in questions[lo : lo + size]] for lo in range(0, len(questions), size)]
    out: list[Completion] = []
    for comps in _generate_jobs(ctx, jobs):
        out.extend(comps)
        if ctx.progress:
            ctx.progress(sum(len(c.samples) for c in comps))
    return out


def _job_size(ctx: EvalContext, n: int) -> int:
    """Questions per engine call: ``batch_size``; on an engine that shares its calls, at most one
    ``max_batch_size`` batch of ``n``-sample rows, so that the jobs spread evenly over the engines."""
    rows = getattr(ctx.engine, "max_batch_size", None)
    if getattr(ctx.engine, "generate_shares", None) is None or not isinstance(rows, int):
        return ctx.settings.batch_size
    return max(1, min(ctx.settings.batch_size, rows // n))


def _generate_jobs(ctx: EvalContext, jobs: list[list[Request]]) -> Iterator[list[Completion]]:
    """Each job's completions, in order: shared with idle engines where the engine offers it."""
    share = getattr(ctx.engine, "generate_shares", None)
    if share is not None and len(jobs) > 1:
        yield from share(jobs)
        return
    for reqs in jobs:
        yield ctx.engine.generate(reqs)


def greedy(ctx: EvalContext, questions: Sequence[Question], **kw: Any) -> list[Sample]:
    """One greedy decode per question (the trajectory RailCap, TED and LNE start from)."""
    return [c.samples[0] for c in decode(ctx, questions, n=1, temperature=0.0, salt="greedy", **kw)]


def sampled_per_question(settings: DecodeSettings, greedy: bool = False) -> int:
    """Responses :func:`sample_and_grade` decodes per question: m, or 1 at temperature 0 or with a ``greedy``
    readout (replicated m times)."""
    return 1 if greedy or settings.temperature == 0 else settings.m


def greedy_readout(ctx: EvalContext) -> EvalContext:
    """``ctx`` with its readout at temperature 0 (the official readout of LNE-blocking and Shortcut)."""
    return dataclasses.replace(ctx, settings=dataclasses.replace(ctx.settings, temperature=0.0))


def sample_and_grade(
    ctx: EvalContext,
    questions: Sequence[Question],
    *,
    intervention: Callable[[Question], Intervention | None] | None = None,
    salt: str = "sample",
) -> list[QuestionOutcome]:
    """m samples per question at the context's temperature, graded: c = #correct, m = m."""
    s = ctx.settings
    n, temp = (1, 0.0) if s.temperature == 0 else (s.m, s.temperature)
    comps = decode(ctx, questions, n=n, temperature=temp, salt=salt, intervention=intervention)
    outcomes = []
    for q, comp in zip(questions, comps):
        samples = comp.samples * (s.m if n == 1 and s.m > 1 else 1)  # greedy: m identical readouts
        grades = [ctx.task.grade(smp.text, q) for smp in samples]
        extras = {"triggers": sum(smp.triggers for smp in samples)} if intervention else {}
        c, r01 = sum(g.correct for g in grades), int(grades[0].correct)
        outcomes.append(QuestionOutcome(q.index, samples, grades, c, len(samples), r01, extras=extras))
    return outcomes
