"""A (family, domain) group of the temperature dimension: the cells the dynamics step reads together.

Built by :func:`railsweep.sweep.plan.cells.temperature_groups`, read by :mod:`railsweep.dynamics.step`;
plain data, so it travels to a Ray task as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TemperatureGroup:
    """The models' weights and their cell per tau. ``adapters``: ``(("M_cl", path), ("M_co", path))``, plus
    ``("base", None)`` with ``dynamics.base``; ``cells``: ``(model, tau, cell_id)`` triples; ``temperatures``:
    every tau sampled, the spec's plus greedy (0, the collapse factor's reference and the trajectory the
    logit gaps are read along); ``task_cell``: the M_cl greedy cell's ``CellConfig.to_dict()`` (its task)."""

    family: str
    domain: str
    base: str
    adapters: tuple[tuple[str, str | None], ...]
    cells: tuple[tuple[str, float, str], ...]
    temperatures: tuple[float, ...]
    task_cell: dict[str, Any]

    def cell_id(self, model: str, tau: float) -> str:
        return next(c for m, t, c in self.cells if m == model and t == tau)

    @property
    def cell_ids(self) -> list[str]:
        return [c for _, _, c in self.cells]
