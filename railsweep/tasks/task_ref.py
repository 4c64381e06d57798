"""What a ``--task`` value (or a sweep's ``readout.task``) names: ``lm_eval:NAME``, a harness task
(:mod:`railsweep.tasks.lm_eval.spec`), or a task file's path or a shipped task's name
(:mod:`railsweep.tasks.kinds.file_spec`). Both specs answer the same questions (name, content hash, answer
rules, answer type), so cells and sweep specs treat them alike.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from railsweep.errors import ConfigError
from railsweep.tasks.data.rows import FORMATS, format_of
from railsweep.tasks.kinds.file_spec import TaskSpec, data_files, load_task_file
from railsweep.tasks.kinds.file_task import FileTask
from railsweep.tasks.lm_eval.groups import expand_lm_eval_ref
from railsweep.tasks.lm_eval.spec import LmEvalSpec, is_lm_eval_ref, load_lm_eval_spec
from railsweep.tasks.lm_eval.spec import data_files as harness_data_files
from railsweep.tasks.lm_eval.task import LmEvalTask

AnyTaskSpec = TaskSpec | LmEvalSpec


def load_task_spec(ref: str | Path) -> AnyTaskSpec:
    """The checked spec ``ref`` names; no data is read. A harness group or tag is refused, naming its members:
    only ``railsweep eval`` and a sweep spec's ``readout.task`` expand one (:mod:`railsweep.sweep.spec.members`)."""
    if not is_lm_eval_ref(ref):
        return load_task_file(ref)
    group = expand_lm_eval_ref(ref)  # a task expands into itself, checked
    if group.kind != "task":
        raise ConfigError(
            f"task {ref!r} is a harness {group.kind} of {len(group.members)} tasks and this reads one task: name one "
            f"({', '.join(group.members[:2])}, ...); `railsweep eval --task {ref}` runs a cell per member, a sweep spec "
            "with it as readout.task a sweep per member"
        )
    return load_lm_eval_spec(ref)


def spec_files(spec: AnyTaskSpec, task_dir: str | Path | None, split: str, fewshot: str | Path | None) -> list[Path]:
    """The local files a task reads (for provenance checksums)."""
    if isinstance(spec, LmEvalSpec):
        return harness_data_files(spec, task_dir)  # type: ignore[arg-type]
    return data_files(spec, task_dir, split, fewshot)


def with_data_file(spec: AnyTaskSpec, path: str | Path) -> TaskSpec:
    """``spec`` reading its rows from ``path`` instead (e.g. a control set in the task's own format): the same
    fields, prompt, filter and grader; the format told from the file's suffix, else the task's declared one."""
    if isinstance(spec, LmEvalSpec):
        raise ConfigError(
            f"--control {path}: a harness task ({spec.name}) reads its own splits; give the control rows as a task "
            "file's data (docs/tasks.md)"
        )
    path = Path(path).resolve()
    fmt = format_of(path) or spec.data.format
    if fmt is None:
        raise ConfigError(f"--control {path}: cannot tell the format from the suffix; use one of {', '.join(FORMATS)}")
    data = dataclasses.replace(spec.data, path=str(path), hub=None, config=None, format=fmt)
    return dataclasses.replace(spec, data=data)


def build_task(spec: AnyTaskSpec, task_dir: str | Path | None, *, split: str = "test",
               fewshot: str | Path | None = None, limit: int | None = None, leak_split: str | Path | None = None,
               answer_rule: str | None = None) -> FileTask | LmEvalTask:  # fmt: skip
    """The task ``spec`` declares, its rows read from ``task_dir`` (a harness task ignores ``split`` and
    ``fewshot``: its config chooses them); malformed data -> DataError."""
    if isinstance(spec, LmEvalSpec):
        return LmEvalTask(spec, task_dir, limit=limit, leak_split=leak_split, answer_rule=answer_rule)  # type: ignore[arg-type]
    return FileTask(spec, task_dir, split=split, fewshot_path=fewshot, limit=limit, leak_split=leak_split,
                    answer_rule=answer_rule)  # fmt: skip
