"""What the steps of one sweep share (:class:`SweepRun`), and the small acts every step may need."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from railsweep.sweep.plan.cells import SweepCell
from railsweep.sweep.spec.sweep_spec import SweepSpec
from railsweep.sweep.tracking.tracker import Tracker


@dataclass
class SweepRun:
    """The resolved spec, its cells and its parent run."""

    spec: SweepSpec
    table: str
    cells: list[SweepCell]
    readouts: list[dict[str, str]]
    tracker: Tracker
    experiment_id: str
    parent_id: str
    sweep_id: str
    run_tags: dict[str, str]
    out: Any
    t_start: float
    timings: dict[str, float] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def add_time(run: SweepRun, phase: str, seconds: float) -> None:
    """Add ``seconds`` to a phase's time (phases are disjoint: together with ``other_s`` they make up the wall)."""
    run.timings[phase] = run.timings.get(phase, 0.0) + seconds


def cell_meta(cell: SweepCell) -> dict[str, Any]:
    """What the sweep records of one cell: in the spec artifact of its parent run, and in every trial's context."""
    return {"config": cell.config.to_dict(), "clean_id": cell.clean_id, "params": cell.flat_params(),
            "label": cell.label(), "run_name": cell.run_name(), "run_tags": cell.run_tags()}  # fmt: skip


def trial_cells(cells: list[SweepCell]) -> dict[str, dict[str, Any]]:
    """Every trial's view of the cells, by id: :func:`cell_meta` and, under ``"cell"``, the checked
    ``CellConfig`` itself (shipped as it is, so the engine does not check it again)."""
    return {c.cell_id: {**cell_meta(c), "cell": c.config} for c in cells}


def kill_actors(handles: dict[str, Any]) -> None:
    """Kill Ray actors for good (no restart); one already dead is passed over."""
    import ray  # optional heavy dependency: the sweep's

    for h in handles.values():
        with contextlib.suppress(Exception):
            ray.kill(h, no_restart=True)
