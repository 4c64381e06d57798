"""What ``railsweep eval`` does once every input is checked. Loads torch and pandas (the command imports it when
it runs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tqdm import tqdm

from railsweep.config import CellConfig
from railsweep.engines import factory
from railsweep.engines.config import EngineConfig
from railsweep.evaluate import cell_provenance, evaluate_cell, load_task


def evaluate(args: argparse.Namespace, prepared: list[tuple[CellConfig, EngineConfig, dict[str, Any]]], out: Path,
             shared: dict[str, Any]) -> int:  # fmt: skip
    """The expensive part, once every input is checked: the engine once, then each cell's task, decoding and files.
    ``shared``: what every cell's provenance records besides its own (the harness group the cells are members of)."""
    tasks = [load_task(cell) for cell, _, _ in prepared]  # malformed task data is refused here, before the model loads
    engine = factory.build_engine(prepared[0][1])
    try:
        for (cell, engine_cfg, extra), task in zip(prepared, tasks, strict=True):
            _evaluate_one(args, cell, engine_cfg, engine, task, out, {**shared, **extra})
    finally:
        engine.close()
    return 0


def _evaluate_one(args, cell: CellConfig, engine_cfg: EngineConfig, engine, task, out: Path, extra: dict[str, Any]) -> None:
    n_questions = len(task.questions()) if cell.limit is None else min(cell.limit, len(task.questions()))
    bar = tqdm(total=n_questions * cell.m, unit="sample", desc=cell.label(), disable=None)  # off unless a tty
    provenance = {**cell_provenance(cell, engine_cfg), **extra}
    try:
        result = evaluate_cell(cell, engine, task, out_dir=out, batch_size=args.batch_size, cache_dir=args.cache_dir,
                               progress=bar.update, provenance=provenance)  # fmt: skip
    finally:
        bar.close()
    print(result.paths.questions)
    print(result.summary())
