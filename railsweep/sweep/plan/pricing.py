"""What a sweep costs, known before it starts: cells, samples and generated tokens per engine, wall time per
cluster. Nothing is built, loaded or started. Steps of :func:`price_sweep`:

1. a stand-in resolution (:func:`~railsweep.sweep.plan.price_inputs.dry_resolve`): a miniature world's
   families, adapters, test size and leak split from its preset's config, not a build;
2. the driver's own grid: :func:`~railsweep.sweep.plan.cells.expand` plus the detectors' readout cells;
3. per cell: questions x the strategy's ``decodes`` per question (greedy trajectories included), each response
   as long as the world's measured responses to its question, else its gold answer under the world's
   tokenizer, capped at ``max_new_tokens``, else ``max_new_tokens`` itself (an upper bound); one-off steps
   (Shortcut's localisation) once per family and domain; tokens of a patched decode (a strategy whose
   intervention declares ``decode = "patched"``, and the localisation's patched passes) counted apart;
4. per cluster size: the engines the driver would create, each family's plain and patched tokens over its
   engines' measured tokens/s of each kind (patched tokens at the plain rate, with a note, where the table has
   no patched rate); the slowest family sets the wall time, and device-hours are the cluster's units x that time.

Not priced: engine start-up, scoring and MLflow logging (seconds per cell), the dynamics and detection steps
(they decode nothing).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from railsweep.errors import ConfigError
from railsweep.strategies import build_strategy
from railsweep.strategy_registry import registration
from railsweep.sweep.plan.cells import SweepCell, effective_table
from railsweep.sweep.plan.detect_cells import grid_cells
from railsweep.sweep.plan.pool import engine_layout
from railsweep.sweep.plan.price_inputs import Questions, dry_resolve, mlp_widths_of, sweep_questions
from railsweep.sweep.plan.throughput import Rate, ThroughputTable, device_kind, load_throughput
from railsweep.sweep.spec.options import check_cluster_sizes, chosen_specs
from railsweep.sweep.spec.sections import FamilySpec
from railsweep.sweep.spec.sweep_spec import SweepSpec


@dataclass(frozen=True)
class EngineCost:
    """One family's engine(s): its cells, the questions they read, responses decoded, tokens generated."""

    family: str
    model: str
    cells: int
    questions: int
    samples: int
    tokens: int
    one_off_samples: int
    one_off_tokens: int
    patched_tokens: int = 0  # of the total: tokens decoded patched (priced at the table's patched rate)

    @property
    def total_samples(self) -> int:
        return self.samples + self.one_off_samples

    @property
    def total_tokens(self) -> int:
        return self.tokens + self.one_off_tokens


@dataclass(frozen=True)
class ClusterCost:
    units: int  # CPU cores or GPUs
    engines: int
    wall_s: float | None  # None: not priced (see note)
    device_hours: float | None
    note: str = ""


@dataclass(frozen=True)
class SweepPrice:
    name: str
    table: str
    cells: int
    clean_cells: int
    m: int
    max_new_tokens: int
    questions: Questions
    device: str  # cpu | cuda | mps
    engines: tuple[EngineCost, ...]
    clusters: tuple[ClusterCost, ...]
    throughput: str  # the table's path and hardware
    notes: tuple[str, ...]

    @property
    def samples(self) -> int:
        return sum(e.total_samples for e in self.engines)

    @property
    def tokens(self) -> int:
        return sum(e.total_tokens for e in self.engines)


def price_sweep(spec: SweepSpec, table: str, throughput: ThroughputTable,
                cluster_sizes: Sequence[int] | None = None) -> SweepPrice:  # fmt: skip
    """The cost of running ``spec`` (unresolved) for ``table``; see the module docstring."""
    spec = dry_resolve(spec)
    table = effective_table(spec, table)
    cells, _ = grid_cells(spec, table, write=False)
    qs = sweep_questions(spec)
    notes: list[str] = []
    engines = [_engine_cost(spec, fam, [c for c in cells if c.family == fam.name], qs, notes)
               for fam in spec.families if any(c.family == fam.name for c in cells)]  # fmt: skip
    kind = device_kind(spec.engine.device)
    default = [2, 4, 8, 16] if kind == "cpu" else [max(len(engines), 1) * k for k in (1, 2, 4, 8)]
    sizes = list(cluster_sizes or default)
    clusters = tuple(_cluster(spec, kind, engines, n, throughput, notes) for n in sizes)
    return SweepPrice(spec.name, table, len(cells), sum(c.role == "clean" for c in cells), spec.readout.m,
                      spec.readout.max_new_tokens, qs, kind, tuple(engines), clusters,
                      f"{throughput.path} ({throughput.hardware})", tuple(dict.fromkeys(notes)))  # fmt: skip


def _tokens(qs: Questions, indices: Sequence[int], cap: int) -> int:
    """Expected generated tokens of one response to each of ``indices``."""
    return cap * len(indices) if qs.lengths is None else sum(min(qs.lengths[i], cap) for i in indices)


def questions_read(limit: int | None, n: int) -> int:
    """The questions a readout with ``limit`` reads of a split of ``n`` (all without a limit)."""
    return min(limit or n, n)


def cell_samples(cell: SweepCell, n_questions: int) -> int:
    """Samples the engines decode for one cell's own readout (its strategy's one-off steps aside)."""
    cfg = cell.config
    per_q = build_strategy(cfg.strategy, config=cfg.strategy_config).decodes(cfg.decode_settings())
    return per_q * questions_read(cfg.limit, n_questions)


def _engine_cost(spec: SweepSpec, fam: FamilySpec, cells: list[SweepCell], qs: Questions,
                 notes: list[str]) -> EngineCost:  # fmt: skip
    samples = tokens = one_samples = one_tokens = questions = patched = 0
    done: set[tuple[Any, ...]] = set()
    for cell in cells:
        cfg = cell.config
        indices = list(range(questions_read(cfg.limit, qs.n)))
        strategy = build_strategy(cfg.strategy, config=cfg.strategy_config)
        per_q = strategy.decodes(cfg.decode_settings())
        questions += len(indices)
        samples += per_q * len(indices)
        own = per_q * _tokens(qs, indices, cfg.max_new_tokens)
        tokens += own
        patched += own if registration(cfg.strategy).decode == "patched" else 0
        if (one_off := getattr(strategy, "one_off", None)) is None:
            continue
        if (widths := mlp_widths_of(spec, fam)) is None:
            notes.append(f"{cfg.strategy}'s one-off step for {fam.name} is not priced: {fam.base}'s config.json "
                         "(its layer widths) is not on this machine")  # fmt: skip
            continue
        leaked = qs.leaked if qs.leaked is not None else frozenset(indices)
        planned = one_off(indices, leaked, widths)
        if planned is None or (cfg.adapter, cfg.clean_adapter, planned[0]) in done:
            continue
        done.add((cfg.adapter, cfg.clean_adapter, planned[0]))
        for chosen, runs, is_patched in planned[1]:
            pass_tokens = runs * _tokens(qs, chosen, cfg.max_new_tokens)
            one_samples += runs * len(chosen)
            one_tokens += pass_tokens
            patched += pass_tokens if is_patched else 0
    return EngineCost(fam.name, fam.base, len(cells), questions, samples, tokens, one_samples, one_tokens, patched)


def _cluster(spec: SweepSpec, kind: str, engines: list[EngineCost], units: int, throughput: ThroughputTable,
             notes: list[str]) -> ClusterCost:  # fmt: skip
    """Wall time on ``units`` cores or GPUs, the engines laid out as the sweep would: the slowest family's."""
    gpu = kind != "cpu"
    layout = engine_layout({e.family: max(e.cells, 1) for e in engines}, units=units,
                           replicas=spec.resources.engine_replicas)  # fmt: skip
    n_engines = max(sum(layout.values()), 1)
    if gpu and units < n_engines:
        return ClusterCost(units, n_engines, None, None,
                           f"needs >= {n_engines} GPUs (one engine per family and GPU)")  # fmt: skip
    per_engine = 1.0 if gpu else units / n_engines
    wall = 0.0
    for e in engines:
        if (rate := throughput.rate(spec.engine.backend, kind, e.model)) is None:
            where = f"in {throughput.path}" if throughput.rates else "(no throughput table)"
            notes.append(f"no throughput for {spec.engine.backend}/{kind}/{e.model} {where}: measure it "
                         "with bench/throughput.py on the target hardware and pass --throughput")  # fmt: skip
            return ClusterCost(units, n_engines, None, None, "no throughput measured")
        patched = _patched_rate(kind, e, rate, throughput, notes)
        seconds = (e.total_tokens - e.patched_tokens) / rate.per_unit + e.patched_tokens / patched.per_unit
        wall = max(wall, seconds / (per_engine * layout[e.family]))
    return ClusterCost(units, n_engines, wall, units * wall / 3600.0)


def _patched_rate(kind: str, e: EngineCost, plain: Rate, throughput: ThroughputTable, notes: list[str]) -> Rate:
    """The table's patched rate for ``e``'s model (a transformers engine's: a vLLM sweep decodes patched cells on
    one), else its plain rate with a note saying so."""
    if not e.patched_tokens:
        return plain
    rate = throughput.rate("transformers", kind, e.model, decode="patched")
    if rate is None:
        notes.append(f"{e.patched_tokens:,} patched tokens of {e.family} are priced at its plain rate: "
                     f"{throughput.path} has no patched rate for {e.model} (a patched token costs more: a reference "
                     "model runs in lockstep); measure it with bench/throughput.py --patched")  # fmt: skip
        return plain
    notes.append(f"{e.patched_tokens:,} patched tokens of {e.family} priced at {rate.per_unit:,.1f} tokens/s of one "
                 f"{'core' if kind == 'cpu' else 'GPU'} (its plain rate: {plain.per_unit:,.1f})")  # fmt: skip
    return rate


def format_price(p: SweepPrice, *, dry_run: bool = True) -> str:
    """The grid, per-engine counts and the cluster table: the dry run's printout, or a sweep's plan."""
    unit, hours = ("cores", "CPU-hours") if p.device == "cpu" else ("GPUs", "GPU-hours")
    q = p.questions
    lines = [
        f"[dry-run] sweep {p.name!r}, table {p.table}: nothing started (no Ray, no MLflow, no world built, no model loaded)"
        if dry_run else f"[sweep] plan of sweep {p.name!r}, table {p.table}, as priced before it starts:",
        f"cells: {p.cells}, of which clean references: {p.clean_cells}; m = {p.m}; max_new_tokens = {p.max_new_tokens}",
        f"questions: {q.n} in {q.source}",
        f"response length: {q.length_source}",
        "",
        f"{'engine (family)':<16} {'model':<32} {'cells':>5} {'questions':>9} {'samples':>10} {'tokens':>12} "
        f"{'one-off samples':>15} {'one-off tokens':>14}",
    ]  # fmt: skip
    for e in p.engines:
        lines.append(f"{e.family:<16} {e.model:<32} {e.cells:>5} {e.questions:>9,} {e.samples:>10,} {e.tokens:>12,} "
                     f"{e.one_off_samples:>15,} {e.one_off_tokens:>14,}")  # fmt: skip
    lines += [
        f"{'total':<16} {'':<32} {p.cells:>5} {sum(e.questions for e in p.engines):>9,} {p.samples:>10,} "
        f"{p.tokens:>12,}   (samples and tokens include the one-off steps)",
        "",
        f"throughput: {p.throughput}",
        f"{'cluster':>8} {'engines':>7} {'wall time':>11} {hours:>10}",
    ]  # fmt: skip
    for c in p.clusters:
        wall = _duration(c.wall_s) if c.wall_s is not None else "-"
        dh = f"{c.device_hours:.2f}" if c.device_hours is not None else "-"
        lines.append(f"{c.units:>3} {unit:<4} {c.engines:>7} {wall:>11} {dh:>10}  {c.note}".rstrip())
    lines.append("(decoding only: engine start-up, scoring and MLflow logging add seconds per cell"
                 + ("; tokens/s assumed to grow linearly with cores)" if p.device == "cpu" else ")"))  # fmt: skip
    lines += [f"note: {n}" for n in p.notes]
    return "\n".join(lines)


def _duration(s: float) -> str:
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min" if s < 5400 else f"{s / 3600:.1f} h"


def price_params(p: SweepPrice) -> dict[str, str]:
    """The price as flat MLflow parameters of the sweep's parent run (``cost.*``)."""
    out: dict[str, Any] = {
        "cost.cells": p.cells, "cost.questions": p.questions.n, "cost.samples": p.samples, "cost.tokens": p.tokens,
        "cost.length_source": p.questions.length_source, "cost.throughput": p.throughput,
    }  # fmt: skip
    for e in p.engines:
        out |= {f"cost.samples.{e.family}": e.total_samples, f"cost.tokens.{e.family}": e.total_tokens}
    unit = "cores" if p.device == "cpu" else "gpus"
    for c in p.clusters:
        if c.wall_s is not None:
            out[f"cost.wall_s.{c.units}{unit}"] = round(c.wall_s, 1)
            out[f"cost.device_hours.{c.units}{unit}"] = round(c.device_hours or 0.0, 3)
    return {k: str(v)[:500] for k, v in out.items()}


def sweep_price(spec: SweepSpec, table: str, args: argparse.Namespace) -> SweepPrice:
    """The price of ``spec`` for ``table`` with the command line's throughput table and cluster sizes."""
    return price_sweep(spec, table, load_throughput(args.throughput), check_cluster_sizes(args.cluster_sizes))


def dry_run(args: argparse.Namespace, table: str) -> int:
    """``--dry-run``: print what the sweep would cost; nothing is started, built, loaded or written."""
    if not (specs := chosen_specs(args)):
        raise ConfigError("--dry-run needs --preset or --spec (without them the sweep picks its preset by the GPUs "
                          "of the cluster it joins)")  # fmt: skip
    prices = [sweep_price(spec, table, args) for spec in specs]  # every member's, before anything is printed
    for spec, price in zip(specs, prices, strict=True):
        if len(specs) > 1:
            print(f"[dry-run] {spec.task_group}, member {spec.readout.task} ({spec.name}):", flush=True)
        print(format_price(price), flush=True)
    designs = dict.fromkeys((questions_read(spec.readout.limit, price.questions.n), price.m, spec.scoring.B)
                            for spec, price in zip(specs, prices))  # fmt: skip
    for design in designs:  # a group's members often share one design: its planner lines once
        print("\n" + power_lines(getattr(args, "pilot", None), *design), flush=True)
    return 0


def power_lines(pilot: str | None, n: int, m: int, B: int) -> str:
    """The planner's printout for the sweep's design (n, m, B) and the paper's, from ``pilot`` or M_cl's."""
    import numpy as np

    # pandas, pyarrow: the pilot's cells are read only when a dry run prints the planner
    from railsweep.analysis.planning import PAPER_DESIGN, load_pilot, plan_text, reference_pilot

    rng = np.random.default_rng(0)
    pop, source = load_pilot(pilot, rng) if pilot else reference_pilot(rng)
    designs = [(n, m, B)] + ([PAPER_DESIGN] if (n, m, B) != PAPER_DESIGN else [])
    return (plan_text(pop, source, designs, rng)
            + "\n(railsweep plan --mde X: the questions a difference X needs)")
