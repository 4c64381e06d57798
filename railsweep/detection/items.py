"""The items a detection run scores: a test split (with its leak split when known) and a control set.

The control set (items known to be absent from training) calibrates the thresholds, so it must share no
item with the test set: :func:`check_disjoint` refuses one that does and names the first shared item.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from railsweep.detection.base import Group, Item
from railsweep.errors import ConfigError
from railsweep.tasks.base import Task
from railsweep.tasks.data.gsm8k_rows import read_jsonl
from railsweep.tasks.data.leak_split import read_leak_split


def read_items(path: str | Path, group: str, leak_split: str | Path | None = None) -> list[Item]:
    """GSM8K-format JSONL rows ``{"question", "answer"}`` as items (``leaked`` from ``leak_split``)."""
    rows = read_jsonl(path)
    leaked = read_leak_split(leak_split, len(rows)) if leak_split is not None else None
    return [
        Item(i, group, r["question"], r["answer"], None if leaked is None else i in leaked)  # type: ignore[arg-type]
        for i, r in enumerate(rows)
    ]


def task_items(task: Task, group: Group = "test") -> list[Item]:
    """A task's questions as items (``railsweep detect --task``): the item id is the question index, the
    solution the task's solution field, or its gold answer where it declares none (the corpus side then
    matches question + answer), the prompt the one the task renders for the model (cdd decodes it)."""
    return [Item(q.index, group, q.question, q.solution or q.gold, q.leaked, prompt=task.prompt(q))
            for q in task.questions()]  # fmt: skip


def _key(text: str) -> str:
    return " ".join(text.lower().split())


def check_disjoint(test: Sequence[Item], control: Sequence[Item]) -> None:
    """ConfigError when a control item's question is also a test item's (case and spacing ignored)."""
    seen = {_key(it.question): it.item_id for it in test}
    for it in control:
        if _key(it.question) in seen:
            raise ConfigError(
                f"the control set overlaps the test set: control item {it.item_id} is test item "
                f"{seen[_key(it.question)]} ({it.question[:60]!r}); a control must be known to be absent"
            )
