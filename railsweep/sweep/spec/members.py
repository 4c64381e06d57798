"""A sweep over a harness group or tag: one sweep per member task, run one after another in one job.

``readout.task: lm_eval:mgsm_direct`` names a tag of 11 tasks. The harness scores each member on its own, and
so does a sweep: :func:`load_specs` makes one spec per member, in the harness's order, with ``name``
``<name>-<member>``, ``readout.task`` ``lm_eval:<member>``, ``data_dir`` ``<data_dir>/<member>/`` and
``task_group`` the group. Every member is checked before anything starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError, DataError
from railsweep.sweep.spec.sweep_spec import SweepSpec, read_spec_data, spec_from_dict
from railsweep.tasks.lm_eval.groups import Expansion, expand_lm_eval_ref
from railsweep.tasks.lm_eval.spec import PREFIX, is_lm_eval_ref


def load_specs(preset_or_path: str | Path) -> list[SweepSpec]:
    """The validated spec of a preset or YAML file, or one per member task of a harness group or tag."""
    data, name = read_spec_data(preset_or_path)
    if (group := _group_of(data)) is None:
        return [spec_from_dict(data, name=name)]
    return [spec_from_dict(d, name=n) for d, n in member_data(data, name, group)]


def _group_of(data: Any) -> Expansion | None:
    """The group or tag the spec mapping's ``readout.task`` names; None for a task, a task file or none."""
    readout = data.get("readout") if isinstance(data, dict) else None
    task = readout.get("task") if isinstance(readout, dict) else None
    if not isinstance(task, str) or not is_lm_eval_ref(task):
        return None
    try:
        expansion = expand_lm_eval_ref(task)
    except ConfigError:  # not a task either: the spec's validation says so, naming the field
        return None
    return expansion if expansion.group else None


def member_data(data: dict[str, Any], name: str, group: Expansion) -> list[tuple[dict[str, Any], str]]:
    """``(mapping, name)`` of each member's spec; the group's data folder must hold one sub-folder per member."""
    what = f"readout.task {group.ref!r} (a harness {group.kind} of {len(group.members)} tasks)"
    if "task_group" in data:
        raise ConfigError(f"{what}: leave task_group out; railsweep sets it on each member's sweep")
    if not data.get("data_dir"):
        raise ConfigError(f"{what}: give data_dir, a folder with one sub-folder of split files per member task")
    if data.get("leak_split") is not None:
        raise ConfigError(f"{what}: leak_split marks one task's questions; sweep the member tasks one by one with it")
    root = Path(str(data["data_dir"])).expanduser()
    members = [m[len(PREFIX):] for m in group.members]
    missing = [root / m for m in members if not (root / m).is_dir()]
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise DataError(f"{what} reads each member's split files from data_dir/<member>/: no folder "
                        f"{', '.join(map(str, missing[:3]))}{more}")
    return [({**data, "readout": {**data["readout"], "task": ref}, "data_dir": str(root / m),
              "task_group": group.ref}, f"{name}-{m}")
            for ref, m in zip(group.members, members, strict=True)]  # fmt: skip
