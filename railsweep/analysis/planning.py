"""The planner's pilot from a folder of cells, and its printout (``railsweep plan``, ``railsweep sweep --dry-run``).

Steps of :func:`load_pilot`:
  1. read every per-question file under the folder (responses files skipped);
  2. take the first (family, domain) of a mitigated cell, in sorted order, whose family has a clean cell;
  3. with an Identity cell and another strategy's cell of that setting (RailCap first): the three-cell pilot,
     else the clean-only pilot (:mod:`railsweep.metrics.power`).
Without a folder the pilot is :func:`reference_pilot` (mean 0.73, like the smollm2 world's M_cl).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from railsweep.errors import DataError
from railsweep.metrics.power import Plan, format_plan, pilot_from_cells, pilot_from_clean, plan
from railsweep.metrics.simulate import Population
from railsweep.results.io import RESPONSES_SUFFIX, read_cell

REFERENCE_QUESTIONS = 2000
PAPER_DESIGN = (1319, 50, 50)  # GSM8K's test split, m = 50, B = 50 (method.md §6)


def reference_pilot(rng: np.random.Generator) -> tuple[Population, str]:
    """A clean-only pilot with p ~ Beta(2.5, 0.9) over 2,000 questions (its counts drawn at m = 50)."""
    p = rng.beta(2.5, 0.9, REFERENCE_QUESTIONS)
    pop = pilot_from_clean(rng.binomial(50, p), 50, rng)
    return pop, "reference M_cl, p ~ Beta(2.5, 0.9) (no --pilot given; noise-only lower bound)"


def _cells(folder: Path) -> list:
    files = sorted(p for p in folder.rglob("*.parquet") if not p.name.endswith(RESPONSES_SUFFIX))
    if not files:
        raise DataError(f"--pilot {folder}: no per-question files (<cell_id>.parquet) under it")
    return [(f, *read_cell(f)) for f in files]


def _single_m(df, path: Path) -> int:
    ms = df["m"].unique()
    if len(ms) != 1 or int(ms[0]) < 1:
        raise DataError(f"--pilot: {path} does not read every question with one m (found {sorted(ms)[:5]})")
    return int(ms[0])


def load_pilot(folder: str | Path, rng: np.random.Generator) -> tuple[Population, str]:
    """Steps 1–3: the pilot population and a line saying what it was built from."""
    cells = _cells(Path(folder))
    clean = {}
    for p, c, df in sorted(cells, key=lambda t: str(t[0])):
        if c.role == "clean":
            clean.setdefault(c.family or "", (p, df))
    if not clean:
        raise DataError(f"--pilot {folder}: no clean cell (role='clean') among {len(cells)} cells")
    settings = sorted({(c.family or "", c.domain or "") for _, c, _ in cells if c.role == "mitigated"})
    settings = [x for x in settings if x[0] in clean]
    fam, dom = settings[0] if settings else (sorted(clean)[0], "")
    cpath, cdf = clean[fam]
    m = _single_m(cdf, Path(cpath))
    same = [(c, df)
            for _, c, df in cells
            if c.role == "mitigated" and (c.family or "", c.domain or "") == (fam, dom)]  # fmt: skip
    ident = [x for x in same if x[0].strategy == "identity"]
    others = sorted((x for x in same if x[0].strategy != "identity"),
                    key=lambda x: x[0].strategy != "railcap")  # fmt: skip
    where = f"{fam or '-'} × {dom or 'all'}"
    if ident and others:
        frames = [cdf, ident[0][1], others[0][1]]
        joined = frames[0][["question_index", "c", "r01"]]
        for i, df in enumerate(frames[1:], 1):
            joined = joined.merge(df[["question_index", "c", "r01"]], on="question_index",
                                  suffixes=("", f"_{i}"))  # fmt: skip
        if len(joined) < 2:
            raise DataError(f"--pilot {folder}: the cells of {where} share fewer than 2 questions")
        pop = pilot_from_cells(
            joined["c"].to_numpy(), joined["c_1"].to_numpy(), joined["c_2"].to_numpy(), m,
            np.stack([joined[k].to_numpy(dtype=float) for k in ("r01", "r01_1", "r01_2")]),
        )  # fmt: skip
        return pop, f"{where}: Identity vs {others[0][0].label()}, {len(joined)} questions at m = {m}"
    pop = pilot_from_clean(cdf["c"].to_numpy(), m, rng)
    return pop, f"{where}: M_cl alone, {len(cdf)} questions at m = {m} (noise-only lower bound)"


def plans(pop: Population, designs: list[tuple[int, int, int]], rng: np.random.Generator, alpha: float,
          power: float) -> list[Plan]:  # fmt: skip
    return [plan(pop, n, m, B, rng, alpha, power) for n, m, B in designs]


def plan_text(pop: Population, source: str, designs, rng: np.random.Generator, alpha=0.05, power=0.8) -> str:
    return format_plan(plans(pop, list(designs), rng, alpha, power), source)
