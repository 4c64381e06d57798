"""``railsweep eval --task lm_eval:GROUP``: one cell per member task of a harness group or tag.

The harness runs a group (``bbh_cot_fewshot``) or a tag (``mgsm_direct``) as its member tasks, each scored on
its own; so does ``railsweep eval``: :func:`harness_collection` expands the name
(:mod:`railsweep.tasks.lm_eval.groups`), :func:`member_args` gives each member its own options, its split files
read from ``<task-dir>/<member>/`` (one folder per member, as each member reads its own dataset). Every member
is checked before the model loads; the cells share one engine and each records the group in its provenance
(``task_group``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from railsweep.errors import ConfigError, DataError
from railsweep.tasks.lm_eval.groups import Expansion, expand_lm_eval_ref
from railsweep.tasks.lm_eval.spec import PREFIX, is_lm_eval_ref


def harness_collection(args: argparse.Namespace) -> Expansion | None:
    """The group or tag ``--task`` names; None for a single task (a harness task, a task file or none)."""
    if not is_lm_eval_ref(args.task):
        return None
    expansion = expand_lm_eval_ref(args.task)
    return expansion if expansion.group else None


def member_args(args: argparse.Namespace, group: Expansion) -> list[argparse.Namespace]:
    """One copy of the options per member: ``--task lm_eval:MEMBER --task-dir <task-dir>/MEMBER``."""
    what = f"--task {group.ref} (a harness {group.kind} of {len(group.members)} tasks)"
    if args.task_dir is None:
        raise ConfigError(f"{what}: give --task-dir, a folder with one sub-folder of split files per member task")
    if args.leak_split is not None:
        raise ConfigError(f"{what}: --leak-split marks one task's questions; run the member tasks one by one with it")
    names = [m[len(PREFIX):] for m in group.members]
    missing = [n for n in names if not (Path(args.task_dir) / n).is_dir()]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise DataError(
            f"{what} reads each member's split files from --task-dir/<member>/: no folder "
            f"{', '.join(str(Path(args.task_dir) / n) for n in missing[:3])}{more}"
        )
    return [
        argparse.Namespace(**{**vars(args), "task": m, "task_dir": str(Path(args.task_dir) / n)})
        for m, n in zip(group.members, names, strict=True)
    ]
