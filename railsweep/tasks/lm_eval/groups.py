"""``lm_eval:NAME`` where NAME is a harness group or tag: the member tasks it runs, as the harness expands it.

A group is a YAML with ``group: NAME`` and a ``task:`` list (``bbh_cot_fewshot``: 27 tasks); a tag labels each
member's config (``mgsm_direct``). :func:`expand_lm_eval_ref` returns the members in the harness's order, each
checked, so a group with one member railsweep cannot run is refused whole before anything is decoded; so is a
member defined inline (with overrides): railsweep runs tasks by name, and an override changes a task, not its name.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from railsweep.errors import ConfigError
from railsweep.tasks.lm_eval.spec import (
    PREFIX,
    find_task_yaml,
    import_lm_eval,
    is_lm_eval_ref,
    load_lm_eval_spec,
)


@dataclass(frozen=True)
class Expansion:
    """What one ``lm_eval:NAME`` runs: itself (a task) or the members of a group or tag."""

    ref: str
    kind: str  # "task", "group" or "tag"
    members: tuple[str, ...]  # lm_eval:MEMBER refs, each a task

    @property
    def group(self) -> str | None:
        """The group or tag a member cell records (None for a plain task)."""
        return None if self.kind == "task" else self.ref


def _manager_entry(folders: list[Path], name: str):
    """The harness's index entry of ``name`` over ``folders`` (its includes resolved as the harness does)."""
    from lm_eval.tasks import TaskManager  # optional dependency, imported by the caller first

    return TaskManager(include_defaults=False, include_path=[str(f) for f in folders]).task_index.get(name)


def _group_members(root: Path, name: str, ref: str, seen: tuple[str, ...] = ()) -> list[str] | None:
    """Member task names of group ``name`` (nested groups expanded), or None when no YAML declares it."""
    path = find_task_yaml(root, name, key="group")
    if path is None:
        return None
    if name in seen:
        raise ConfigError(f"group {ref!r}: group {name!r} contains itself ({' -> '.join((*seen, name))})")
    entry = _manager_entry([path.parent], name)
    items = (entry.cfg or {}).get("task") or [] if entry is not None else []
    members: list[str] = []
    for item in items if isinstance(items, list) else [items]:
        if not isinstance(item, str):
            what = item.get("task") if isinstance(item, dict) else item
            raise ConfigError(
                f"group {ref!r}: member {what!r} is defined inline in {path} (with overrides); railsweep runs "
                "harness tasks by name: run the member tasks you want one by one"
            )
        nested = _group_members(root, item, ref, (*seen, name)) if find_task_yaml(root, item) is None else None
        members += nested if nested is not None else [item]
    return members


def _tag_members(root: Path, name: str) -> list[str] | None:
    """Tasks labelled with tag ``name`` (the harness's index over the folders that mention it), or None."""
    word = re.compile(rf"^tag:.*\b{re.escape(name)}\b|^\s+-\s*['\"]?{re.escape(name)}['\"]?\s*$", re.M)
    folders = sorted({p.parent for p in root.rglob("*") if p.is_file() and p.suffix in ("", ".yaml")
                      and "tag:" in (text := p.read_text(encoding="utf-8", errors="replace")) and word.search(text)})  # fmt: skip
    if not folders:
        return None
    from lm_eval.tasks._index import Kind  # optional dependency, imported by the caller first

    entry = _manager_entry(folders, name)
    return sorted(entry.tags) if entry is not None and entry.kind == Kind.TAG and entry.tags else None


@functools.lru_cache(maxsize=64)
def expand_lm_eval_ref(ref: str) -> Expansion:
    """The tasks ``lm_eval:NAME`` runs (module docstring); cached: every cell of a sweep asks again."""
    name = ref[len(PREFIX):]
    if not re.fullmatch(r"[\w.\-]+", name):
        load_lm_eval_spec(ref)  # raises: a malformed name is refused before the harness is imported
    lm_eval = import_lm_eval()
    root = Path(lm_eval.__file__).parent / "tasks"
    if find_task_yaml(root, name) is not None:
        return Expansion(ref, "task", (load_lm_eval_spec(ref).ref,))
    kind, names = "group", _group_members(root, name, ref)
    if names is None:
        kind, names = "tag", _tag_members(root, name)
    if not names:
        load_lm_eval_spec(ref)  # raises: no task, group or tag of that name (with a near match)
        raise ConfigError(f"{ref!r}: lm_eval {lm_eval.__version__} declares it with no member tasks")
    members = tuple(dict.fromkeys(f"{PREFIX}{n}" for n in names))
    for member in members:
        try:
            load_lm_eval_spec(member)
        except ConfigError as e:
            raise ConfigError(f"{kind} {ref!r} ({len(members)} tasks) cannot run as a whole: {e}") from e
    return Expansion(ref, kind, members)


def check_member(group: str, task: str | None) -> None:
    """``task`` is one of the member tasks of the harness group or tag ``group`` (ConfigError naming them if not)."""
    expansion = expand_lm_eval_ref(group) if is_lm_eval_ref(group) else None
    if expansion is None or expansion.group is None:
        raise ConfigError(f"task_group {group!r} is not a harness group or tag (lm_eval:NAME)")
    if task not in expansion.members:
        raise ConfigError(
            f"readout.task {task!r} is not a member of task_group {group!r} ({', '.join(expansion.members[:3])}"
            f"{', ...' if len(expansion.members) > 3 else ''})"
        )
