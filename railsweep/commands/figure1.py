"""``railsweep figure1``: the paper's Figure 1 for a clean/contaminated model pair.

Writes ``OUT/figure1.parquet`` (one row per question and model), ``OUT/figure1.json``
(the summary: collapse onto the greedy response, the runner-up share where the models
part ways, M_cl's path diversity and off-rail robustness) and ``OUT/figure1.png``;
with ``--tracking-uri`` the three are also logged to one MLflow run. Either a base
model with its adapters (``--model``, ``--adapter``, ``--task-dir``, ``--leak-split``)
or a family of the miniature world (``--world mini --family neox``). ``--task FILE|NAME``
evaluates a task file instead of GSM8K (its ``{task_dir}``: ``--task-dir`` or the world's data).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from railsweep import argtypes as at
from railsweep.atomic import write_atomic, write_text_atomic
from railsweep.commands.eval import parse_pairs
from railsweep.commands.task_args import add_task_arguments, check_task, load_named_task, task_dir_of
from railsweep.errors import ConfigError
from railsweep.limits import check_decode_memory
from railsweep.miniworld.presets import PRESETS as WORLD_PRESETS
from railsweep.miniworld.presets import preset_config
from railsweep.sweep.tracking import check_tracking_uri, log_figure1

GROUP = "look inside"
EXAMPLES = (
    'railsweep figure1 --world mini --family llama --out figures/fig1',
    'railsweep figure1 --world smollm2 --m 20 --limit 100 --out figures/fig1_smollm2',
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "figure1",
        help="the paper's Figure 1 (collapse, runner-up share, path diversity, off-rail robustness)",
        description="Does a contaminated model behave as the paper's Figure 1 says, where RailCap acts?",
    )
    add_input_arguments(p)
    p.add_argument("--m", type=at.samples, default=20, help="samples per question")
    p.add_argument("--temperature", type=at.temperature, default=0.7, help="sampling temperature (0 = greedy)")
    p.add_argument("--max-new-tokens", type=at.new_tokens, default=96, help="tokens per response at most")
    p.add_argument(
        "--departures", type=at.positive, default=20, help="forced departures per reliably solved question"
    )
    p.add_argument("--limit", type=at.limit, default=None, help="only the first N questions")
    p.add_argument("--seed", type=at.seed, default=0, help="sampling seed")
    p.add_argument("--device", type=at.device, default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument(
        "--tracking-uri", type=at.text, default=None, help="also log the figure to this MLflow server"
    )
    p.add_argument("--out", type=at.writable_dir, required=True, metavar="DIR", help="output directory: figure1.parquet, figure1.json, figure1.png")
    return p


def add_input_arguments(p: argparse.ArgumentParser) -> None:
    """The model pair and its questions: a world family, or a base model with adapters (shared with ``rails``)."""
    p.add_argument(
        "--world",
        choices=sorted(WORLD_PRESETS),
        default=None,
        help="a miniature-world preset (mini, mini_one_road, smoke)",
    )
    p.add_argument("--family", type=at.text, default=None, help="the world's model family (with --world)")
    p.add_argument(
        "--cache-dir",
        type=at.writable_dir,
        default=None,
        help="where the world is cached (default: $RAILSWEEP_CACHE or ~/.cache/railsweep)",
    )
    p.add_argument("--model", type=at.model, default=None, help="base model directory (without --world)")
    p.add_argument(
        "--adapter", action="append", default=[], metavar="NAME=DIR", help="a LoRA adapter (repeatable)"
    )
    add_task_arguments(
        p,
        default="GSM8K format in --task-dir",
        task_dir_help="GSM8K-format data directory, or with --task what its {task_dir} stands for (without "
        "--world, which supplies its own)",
        task_dir_type=at.existing_dir,
    )
    p.add_argument(
        "--leak-split", type=at.existing_file, default=None, help="leak_split.json: which questions M_co saw"
    )
    p.add_argument("--clean", type=at.text, default="clean", help="adapter name of M_cl")
    p.add_argument("--co", type=at.text, default="co_gsm8k", help="adapter name of M_co")


def inputs(args: argparse.Namespace) -> tuple[str, dict[str, str], str | None, str | None]:
    """Check every input, then resolve the model pair and the task's data directory (building a ``--world``
    only after the checks pass)."""
    return _inputs(args, _check_inputs(args))


def _check_inputs(args: argparse.Namespace) -> dict[str, str]:
    """Every input of either kind, before a world is built or a model loads; the adapters given (``--model``).
    ``--task`` is checked here too; with ``--world`` its ``{task_dir}`` is the world's data directory."""
    check_task(args)
    if args.world:
        if args.model or args.adapter or args.task_dir:
            raise ConfigError("--world replaces --model/--adapter/--task-dir; give one or the other")
        config = preset_config(args.world)  # its families and adapters are known before it is built
        if args.family is not None and args.family not in config.families:
            raise ConfigError(
                f"--family {args.family!r}: not in the {args.world!r} world; families: {', '.join(config.families)}"
            )
        names = ("clean",) + tuple(f"co_{d}" for d in config.contamination.domains)
        adapters = dict.fromkeys(names, "")
    else:
        if not (args.model and (args.task_dir or args.task) and args.leak_split):
            raise ConfigError(
                "give --world (and --family), or --model, --adapter, --task-dir (or --task) and --leak-split"
            )
        task_dir_of(args)  # a task file reading {task_dir} needs --task-dir
        adapters = parse_pairs(args.adapter, "--adapter")
        for name, path in adapters.items():
            why = at.model_problem(path, "adapter_config.json")
            if why:
                raise ConfigError(f"--adapter {name}: {why}")
    for name in (args.clean, args.co):
        if name not in adapters:
            raise ConfigError(f"adapter {name!r} is not among the given adapters {sorted(adapters)}")
    return adapters



def _inputs(
    args: argparse.Namespace, adapters: dict[str, str]
) -> tuple[str, dict[str, str], str | None, str | None]:
    if not args.world:
        return args.model, adapters, task_dir_of(args), args.leak_split
    # torch: loaded when the command runs, so `railsweep --help` and refusals of bad input stay fast
    from railsweep.miniworld import build_world

    world = build_world(args.world, cache_dir=args.cache_dir)
    fam = world.family(args.family or world.families[0])
    return (
        str(fam.base_dir),
        {k: str(v) for k, v in fam.adapters.items()},
        str(world.data_dir),
        str(world.leak_split_path),
    )


def run(args: argparse.Namespace) -> int:
    # torch: loaded when the command runs, so `railsweep --help` and refusals of bad input stay fast
    import pandas as pd

    from railsweep.analysis.plots import figure1_plot
    from railsweep.diagnostics.figure1 import Figure1Settings, figure1
    from railsweep.engines.transformers_engine import TransformersEngine

    settings = Figure1Settings(
        m=args.m,
        temperature=args.temperature,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        departures=args.departures,
    )
    check_decode_memory(args.m, args.max_new_tokens)
    out = Path(args.out)
    if args.tracking_uri:
        check_tracking_uri(args.tracking_uri)
    # torch: loaded when the command runs, so `railsweep --help` and refusals of bad input stay fast
    from railsweep.engines.transformers_engine import resolve_device

    resolve_device(args.device)
    model, adapters, task_dir, leak_split = inputs(args)
    task = load_named_task(args, task_dir, leak_split=leak_split, limit=args.limit)
    engine = TransformersEngine(model, adapters=adapters, device=args.device, dtype="float32")
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
        log_figure1(
            args.tracking_uri,
            fig.summary,
            [out / "figure1.parquet", out / "figure1.json", out / "figure1.png"],
        )
    print(json.dumps(fig.summary, default=float))
    return 0
