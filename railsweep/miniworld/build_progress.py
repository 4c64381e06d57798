"""A world build's combined progress: every family's share done and one ETA for the whole world.

Each phase of a family (pretraining, M_cl, one M_co per domain) reports its optimiser steps to
``<world>/progress/<family>/<phase>`` (:class:`railsweep.training.progress.StepReport`); :func:`family_plans`
counts every phase's work in training tokens beforehand. Rates are tokens per CPU second of the training
process (wall seconds for a report without ``cpu``), so a family that shares or yields a core
(:mod:`railsweep.miniworld.scheduling`) is timed at the speed it gets once it has one. A phase runs at its own
measured rate once started, else at the family's latest rate of the same kind (pretraining or adapter), else
of any kind. A family's chain sums its phases, its M_co adapters in parallel (the longest counts); the world's
ETA is the longer of the longest chain and the whole work shared over the cores, and waits until every
family has a rate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from railsweep.contamination.lora import epoch_tokens
from railsweep.training.progress import read_report

EVERY_S = 120.0  # how often the build logs the combined line


@dataclass(frozen=True)
class Phase:
    name: str  # "pretrain", "clean", "co_<domain>"
    tokens: int  # training tokens of the whole phase

    @property
    def kind(self) -> str:
        return "pretrain" if self.name == "pretrain" else "adapter"


def family_plans(config, tokenizer, mixes: Mapping[str, list[str]], skip: Mapping[str, set[str]]) -> dict:
    """``{family: [Phase, ...]}`` in training order; ``skip[family]``: phases lent by another world."""
    plans = {}
    for f in config.families:
        contamination = config.contamination_for(f)
        recipes = {"clean": contamination.cl_recipe, **{n: contamination.recipe for n in mixes if n != "clean"}}
        phases = []
        if not config.base:
            p = config.pretrain
            phases.append(Phase("pretrain", config.steps_for(f) * p.batch_size * p.block_size))
        phases += [Phase(n, sum(epoch_tokens(tokenizer, mixes[n], r))) for n, r in recipes.items()]
        plans[f] = [ph for ph in phases if ph.name not in skip.get(f, set())]
    return plans


def _share(report: dict | None) -> float:
    return report["done"] / report["total"] if report and report["total"] else 0.0


def _rate(report: dict | None, tokens: int) -> float | None:
    """Tokens per CPU second of a started phase (per wall second for a report without ``cpu``; None before its
    first step), over the steps this process took (a resumed run's ``first`` were taken before)."""
    steps = report["done"] - report.get("first", 0) if report else 0
    if steps < 1:
        return None
    seconds = report["cpu"] if "cpu" in report else report["time"] - report["start"]
    return tokens * steps / report["total"] / seconds if seconds > 0 else None


def _current(phases: list[Phase], reports: Mapping[str, dict | None]) -> str:
    for ph in phases:
        r = reports.get(ph.name)
        if r and r["done"] < r["total"]:
            return f"{ph.name} {r['done']}/{r['total']}"
    waiting = [ph.name for ph in phases if _share(reports.get(ph.name)) < 1]
    return f"{waiting[0]} next" if waiting else "done"


def _done(phases: list[Phase], reports: Mapping[str, dict | None]) -> float:
    done = sum(_share(reports.get(ph.name)) * ph.tokens for ph in phases)
    return done / (sum(ph.tokens for ph in phases) or 1)


def remaining(phases: list[Phase], reports: Mapping[str, dict | None]) -> tuple[float, float] | None:
    """(seconds left on the family's chain, CPU seconds of work left), or None before it has a rate."""
    share = {ph.name: _share(reports.get(ph.name)) for ph in phases}
    rate = {ph.name: _rate(reports.get(ph.name), ph.tokens) for ph in phases}
    latest: dict[str, float] = {}  # the latest measured rate per kind, and of any kind
    for ph in phases:
        if rate[ph.name] is not None:
            latest[ph.kind] = latest["any"] = rate[ph.name]
    serial, parallel = 0.0, [0.0]  # the M_co adapters train side by side
    for ph in phases:
        r = rate[ph.name] or latest.get(ph.kind) or latest.get("any")
        if r is None:
            return None
        left = (1 - share[ph.name]) * ph.tokens / r
        if ph.name.startswith("co_"):
            parallel.append(left)
        else:
            serial += left
    return serial + max(parallel), serial + sum(parallel)


def summary(root: Path, plans: Mapping[str, list[Phase]], cores: int = 1) -> str:
    """One line: each family's share done and phase, and the world's ETA on ``cores`` cores."""
    parts, left = [], {}
    for f, phases in plans.items():
        reports = {ph.name: read_report(root / "progress" / f / ph.name) for ph in phases}
        parts.append(f"{f} {100 * _done(phases, reports):.0f} % ({_current(phases, reports)})")
        left[f] = remaining(phases, reports)
    if not left or any(v is None for v in left.values()):
        eta = "eta when every family has a rate"
    else:
        slowest = max(left, key=lambda f: left[f][0])
        shared = sum(work for _, work in left.values()) / max(1, cores)
        chain = left[slowest][0]
        eta = f"eta {chain:.0f}s ({slowest})" if chain >= shared else f"eta {shared:.0f}s ({cores} cores)"
    return f"build: {', '.join(parts)}; {eta}"
