"""The model pair and its questions of ``railsweep figure1`` and ``railsweep rails``: a miniature-world family, or a
base model with adapters; their options and every check of them, before a world is built or a model loads. The
resolution (which may build the world) is :func:`railsweep.commands.figure1_run.inputs`."""

from __future__ import annotations

import argparse

from railsweep import argtypes as at
from railsweep.commands.eval import parse_pairs
from railsweep.commands.task_args import add_task_arguments, check_task, task_dir_of
from railsweep.errors import ConfigError
from railsweep.miniworld.presets import PRESETS as WORLD_PRESETS
from railsweep.miniworld.presets import preset_config


def add_input_arguments(p: argparse.ArgumentParser) -> None:
    """The model pair and its questions: a world family, or a base model with adapters (shared with ``rails``)."""
    p.add_argument("--world", choices=sorted(WORLD_PRESETS), default=None,
                   help="a laboratory world (a `railsweep miniworld build` preset), built on first use")  # fmt: skip
    p.add_argument("--family", type=at.text, default=None, help="the world's model family (with --world)")
    p.add_argument("--cache-dir", type=at.writable_dir, default=None,
                   help="where the world is cached (default: $RAILSWEEP_CACHE or ~/.cache/railsweep)")  # fmt: skip
    p.add_argument("--model", type=at.model, default=None, help="base model directory (without --world)")
    p.add_argument("--adapter", action="append", default=[], metavar="NAME=DIR",
                   help="a LoRA adapter (repeatable)")  # fmt: skip
    add_task_arguments(p, default="GSM8K format in --task-dir",
                       task_dir_help="GSM8K-format data directory, or with --task what its {task_dir} "
                                     "stands for (without --world, which supplies its own)",
                       task_dir_type=at.existing_dir)  # fmt: skip
    p.add_argument("--leak-split", type=at.existing_file, default=None,
                   help="leak_split.json: which questions M_co saw")  # fmt: skip
    p.add_argument("--clean", type=at.text, default="clean", help="adapter name of M_cl")
    p.add_argument("--co", type=at.text, default="co_gsm8k", help="adapter name of M_co")


def check_inputs(args: argparse.Namespace) -> dict[str, str]:
    """Every input of either kind, before a world is built or a model loads; the adapters given (``--model``).
    ``--task`` is checked here too; with ``--world`` its ``{task_dir}`` is the world's data directory."""
    check_task(args)
    if args.world:
        if args.model or args.adapter or args.task_dir:
            raise ConfigError("--world replaces --model/--adapter/--task-dir; give one or the other")
        config = preset_config(args.world)  # its families and adapters are known before it is built
        if args.family is not None and args.family not in config.families:
            raise ConfigError(f"--family {args.family!r}: not in the {args.world!r} world; "
                              f"families: {', '.join(config.families)}")  # fmt: skip
        names = ("clean",) + tuple(f"co_{d}" for d in config.contamination.domains)
        adapters = dict.fromkeys(names, "")
    else:
        if not (args.model and (args.task_dir or args.task) and args.leak_split):
            raise ConfigError("give --world (and --family), or --model, --adapter, --task-dir (or --task) and --leak-split")
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
