"""Typed records of a sweep read back from MLflow (:mod:`railsweep.sweep.tracking.reader`): what the tables,
figures and notebook consume. A cell's tables are fetched on first use, so a reader that needs only the
logged scores downloads no Parquet.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pandas as pd

from railsweep.errors import DataError

FINISHED = "FINISHED"
MISSING = "missing"  # no FINISHED run: failed or not run yet; left out of the tables, never counted as 0


@dataclass(frozen=True)
class CellRecord:
    """One cell of a sweep: ``config``, its resolved ``CellConfig`` as a dict; ``params``, the flat params
    logged on its run; ``scores``, the ``score_pair`` dict its trial logged against the clean run
    ``scored_against`` (None when it logged none)."""

    cell_id: str
    config: Mapping[str, Any]
    label: str
    clean_id: str | None
    params: Mapping[str, Any]
    status: str = MISSING
    run_id: str | None = None
    scores: Mapping[str, Any] | None = None
    scored_against: str | None = None
    load_questions: Callable[[], pd.DataFrame] | None = field(default=None, repr=False, compare=False)
    load_responses: Callable[[], pd.DataFrame | None] | None = field(default=None, repr=False, compare=False)

    @property
    def role(self) -> str:
        return str(self.config["role"])

    @property
    def family(self) -> str:
        return str(self.config["family"])

    @property
    def domain(self) -> str | None:
        return self.config.get("domain")

    @property
    def strategy(self) -> str:
        """The registry name (``railcap``); :attr:`label` is the display label (``RailCap n=4 cap``)."""
        return str(self.config["strategy"])

    @property
    def finished(self) -> bool:
        return self.status == FINISHED

    @cached_property
    def questions(self) -> pd.DataFrame:
        """The per-question table (results schema), fetched on first use."""
        if self.load_questions is None:
            raise DataError(f"cell {self.cell_id} ({self.label}) has no FINISHED run: no per-question table")
        return self.load_questions()

    @cached_property
    def responses(self) -> pd.DataFrame | None:
        """The responses table, fetched on first use; None when the run has none."""
        return None if self.load_responses is None else self.load_responses()


@dataclass(frozen=True)
class SweepRecord:
    """One sweep: its resolved spec (a dict) and every cell of its grid, in grid order (clean cells first)."""

    experiment_id: str
    parent_run_id: str
    spec: Mapping[str, Any]
    cells: tuple[CellRecord, ...]

    @property
    def primary(self) -> tuple[str, str]:
        """(family, domain) of Tables 1, 2 and 4: the spec's ``primary``, else its first family and domain."""
        if prim := self.spec.get("primary"):
            pair = (prim["family"], prim["domain"]) if isinstance(prim, Mapping) else (prim[0], prim[1])
            return (str(pair[0]), str(pair[1]))
        return (str(self.spec["families"][0]["name"]), str(self.spec["domains"][0]))

    @property
    def scoring(self) -> dict[str, Any]:
        """``B``, ``n_boot`` and ``seed`` the sweep scores with (the spec's, defaults filled in)."""
        return {"B": 50, "n_boot": 1000, "seed": 0, **(self.spec.get("scoring") or {})}

    @property
    def missing(self) -> list[str]:
        """Ids of the cells without a FINISHED run."""
        return [c.cell_id for c in self.cells if not c.finished]

    def cell(self, cell_id: str) -> CellRecord:
        for c in self.cells:
            if c.cell_id == cell_id:
                return c
        raise DataError(f"cell {cell_id!r} is not in sweep {self.parent_run_id}")
