"""``--task FILE|NAME`` and ``--task-dir DIR``, declared and turned into a task in one place, so every command
that reads a benchmark names tasks alike (docs/tasks.md):

1. :func:`add_task_arguments` declares both options;
2. :func:`task_dir_of` (or :func:`check_task`) checks the task file completely and resolves the data directory,
   before any model loads;
3. :func:`load_named_task` reads the task's rows (without ``--task``, the built-in GSM8K task).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError
from railsweep.tasks.base import Task
from railsweep.tasks.kinds.file_spec import builtin_tasks
from railsweep.tasks.kinds.gsm8k import GSM8KTask
from railsweep.tasks.task_ref import AnyTaskSpec, build_task, load_task_spec

TASK_HELP = (
    "a task file (YAML: data, prompt, answer extraction, grader; docs/tasks.md), a shipped task's name ({names}) "
    "or lm_eval:NAME, a generative lm-evaluation-harness task on the split files in --task-dir (needs "
    "railsweep[lm-eval]); default: {default}"
)


def add_task_arguments(
    p: argparse.ArgumentParser | Any, *, default: str, task_dir_help: str,
    task_dir_type: Callable[[str], str] | None = None,
) -> None:
    """Declare ``--task`` and ``--task-dir`` on ``p`` (a parser or an argument group); ``default`` says what
    runs without ``--task``."""
    p.add_argument("--task", default=None, metavar="FILE|NAME",
                   help=TASK_HELP.format(names=", ".join(builtin_tasks()), default=default))  # fmt: skip
    p.add_argument("--task-dir", type=task_dir_type, default=None, metavar="DIR", help=task_dir_help)


def check_task(args: argparse.Namespace) -> AnyTaskSpec | None:
    """The spec ``--task`` names, checked completely (no data read); None without ``--task``."""
    return load_task_spec(args.task) if args.task is not None else None


def task_dir_of(args: argparse.Namespace, given: str | None = None) -> str | None:
    """The directory the task's ``{task_dir}`` stands for: ``--task-dir``, else ``given`` (e.g. a world's), else
    the folder of a task file that names its data itself; ConfigError when one is needed and missing."""
    spec = check_task(args)
    task_dir = args.task_dir if args.task_dir is not None else given
    if task_dir is not None or spec is None:
        return task_dir  # its existence is checked where the task loads
    if spec.uses_task_dir():
        raise ConfigError(f"--task {args.task}: the task file reads its data from {{task_dir}}; give --task-dir")
    return str(spec.source.parent)


def load_named_task(
    args: argparse.Namespace, task_dir: str | Path | None, *, leak_split: str | Path | None = None,
    limit: int | None = None, fewshot: str | Path | None = None,
) -> Task:
    """The test split of ``--task`` read from ``task_dir`` under the task's default answer rule, or without
    ``--task`` the built-in GSM8K task of ``task_dir``; malformed data -> DataError."""
    if args.task is None:
        return GSM8KTask.from_dir(task_dir, split="test", fewshot_path=fewshot, leak_split=leak_split, limit=limit)
    return build_task(load_task_spec(args.task), task_dir, fewshot=fewshot, limit=limit, leak_split=leak_split)
