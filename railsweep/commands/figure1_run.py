"""What ``railsweep figure1`` does once it runs (:func:`inputs` serves ``railsweep rails`` too: a ``--world`` is
built only after every check passes). Loads torch and transformers (the command imports it when it runs)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from railsweep.analysis.plots import figure1_plot
from railsweep.atomic import write_atomic, write_text_atomic
from railsweep.commands.model_pair import check_inputs
from railsweep.commands.task_args import load_named_task, task_dir_of
from railsweep.diagnostics.figure1 import Figure1Settings, figure1
from railsweep.engines import transformers_engine
from railsweep.engines.devices import resolve_device
from railsweep.limits import check_decode_memory
from railsweep.miniworld import world as miniworld_world
from railsweep.sweep.tracking.tracker import check_tracking_uri, log_figure1


def inputs(args: argparse.Namespace) -> tuple[str, dict[str, str], str | None, str | None]:
    """Check every input, then resolve the model pair and the task's data directory (building a ``--world``
    only after the checks pass)."""
    return _inputs(args, check_inputs(args))


def _inputs(
    args: argparse.Namespace, adapters: dict[str, str]
) -> tuple[str, dict[str, str], str | None, str | None]:
    if not args.world:
        return args.model, adapters, task_dir_of(args), args.leak_split
    world = miniworld_world.build_world(args.world, cache_dir=args.cache_dir)
    fam = world.family(args.family or world.families[0])
    return (str(fam.base_dir), {k: str(v) for k, v in fam.adapters.items()}, str(world.data_dir),
            str(world.leak_split_path))  # fmt: skip


def run_figure1(args: argparse.Namespace) -> int:
    """Settings and inputs checked, the pair resolved, the figure drawn and its files written (and logged)."""
    settings = Figure1Settings(m=args.m, temperature=args.temperature, max_new_tokens=args.max_new_tokens,
                               seed=args.seed, departures=args.departures)  # fmt: skip
    check_decode_memory(args.m, args.max_new_tokens)
    out = Path(args.out)
    if args.tracking_uri:
        check_tracking_uri(args.tracking_uri)
    resolve_device(args.device)
    model, adapters, task_dir, leak_split = inputs(args)
    task = load_named_task(args, task_dir, leak_split=leak_split, limit=args.limit)
    engine = transformers_engine.TransformersEngine(model, adapters=adapters, device=args.device, dtype="float32")
    try:
        fig = figure1(engine, task, list(task.questions()), args.clean, args.co, settings)
    finally:
        engine.close()
    out.mkdir(parents=True, exist_ok=True)
    rows = pd.DataFrame(fig.rows)
    rows["early_divergence_ranks"] = rows["early_divergence_ranks"].map(
        lambda v: json.dumps(v) if v is not None else None
    )
    write_atomic(out / "figure1.parquet", lambda tmp: rows.to_parquet(tmp, index=False))
    write_text_atomic(out / "figure1.json", json.dumps(fig.summary, indent=1, default=float) + "\n")
    figure1_plot(fig.rows, fig.summary, out / "figure1.png")
    if args.tracking_uri:
        log_figure1(args.tracking_uri, fig.summary,
                    [out / "figure1.parquet", out / "figure1.json", out / "figure1.png"])  # fmt: skip
    print(json.dumps(fig.summary, default=float))
    return 0
