"""The dynamics step of a sweep with ``temperatures``, one (family, domain) group at a time: its temperature
cells' tables → fits, gains and predictions → tables, figures, metrics and tags for the parent run.

Steps of :func:`group_tables` (one group, run as a Ray task by :mod:`railsweep.dynamics.ray_step`):
1. read the group's cells (``read_cells``, the sweep's :func:`railsweep.sweep.tracking.reader.cell_tables`:
   each cell's newest FINISHED run's per-question and responses tables); a cell without one ends the
   group with a DataError naming it (:data:`NOT_FINISHED`);
2. each model's solve probability and verbatim share per tau (:func:`~.observe.observed_from_tables`);
3. teacher-force the gold chains of thought (the task's ``gold_chain``: GSM8K's CoT rendering, or a
   MATH-style solution as written) and the greedy answers (:func:`railsweep.dynamics.collect.force_models`);
4. :func:`railsweep.dynamics.analyse.analyse` them, a ``domain`` column beside ``family``.

:func:`step_outputs` turns the analysed groups into the files, metrics and tags of the parent run.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from railsweep.config import CellConfig
from railsweep.dynamics.analyse import Tables, analyse
from railsweep.dynamics.collect import force_models, replica_counts
from railsweep.dynamics.family_data import FamilyData
from railsweep.dynamics.groups import TemperatureGroup
from railsweep.dynamics.observe import observed_from_tables
from railsweep.dynamics.output import family_summary, write_run
from railsweep.dynamics.settings import DynamicsSettings
from railsweep.engines.threads import apply_thread_budget
from railsweep.errors import DataError
from railsweep.evaluate import load_task

METRIC_PREFIX = "dynamics"
NOT_FINISHED = "without a FINISHED run"  # in the error of a group whose cells did not all finish

# (cell ids, download directory) → {cell id: (per-question table, responses table or None)} for the cells
# that have a FINISHED run; must pickle (it travels to the Ray task)
ReadCells = Callable[[list[str], Path], dict[str, tuple[pd.DataFrame, pd.DataFrame | None]]]


def group_tables(group: TemperatureGroup, settings: DynamicsSettings, read_cells: ReadCells,
                 threads: int = 1) -> dict[str, Any]:  # fmt: skip
    """Steps 1–4 for one group: ``{"tables": Tables, "seconds": {...}, "items": n, "leaked": n}``."""
    apply_thread_budget(threads)
    t0 = time.time()
    task = load_task(CellConfig.from_dict(dict(group.task_cell)))
    questions = list(task.questions())
    items = [q.index for q in questions]
    gold_text = [task.gold_chain(q) for q in questions]  # GSM8K: to_cot; MATH: the solution as written
    observed = _observed(group, read_cells, items, gold_text)
    read_s = time.time() - t0
    t1 = time.time()
    adapters = dict(group.adapters)
    gold, greedy = force_models(
        group.base, adapters, [task.prompt(q) for q in questions], gold_text,
        {m: observed[m][0.0].samples for m in adapters}, settings,
        log=lambda msg: print(f"[dynamics] {group.family}/{group.domain} {msg}", file=sys.stderr, flush=True),
    )  # fmt: skip
    leaked = np.array([bool(q.leaked) for q in questions])
    replicas = _replicas(group.task_cell, items)
    data = FamilyData(group.family, items, leaked, gold, greedy, observed, replicas=replicas)
    forcing_s = time.time() - t1
    tables = analyse(data, settings)
    for name in ("positions", "fits", "predictions", "accuracy", "gains", "replicas"):
        df = getattr(tables, name)
        if df is not None:
            df.insert(1, "domain", group.domain)
    seconds = {"read": read_s, "forcing": forcing_s, "analysis": time.time() - t1 - forcing_s}
    return {"tables": tables, "seconds": seconds, "items": len(items), "leaked": int(data.leaked.sum())}


def _observed(group: TemperatureGroup, read_cells: ReadCells, items: list[int],
              gold_text: list[str]) -> dict[str, dict[float, Any]]:  # fmt: skip
    """Steps 1–2: ``{model: {tau: Observed}}`` from the group's cells' tables."""
    observed: dict[str, dict[float, Any]] = {model: {} for model, _ in group.adapters}
    with tempfile.TemporaryDirectory(prefix="railsweep-dynamics-") as tmp:
        tables = read_cells(group.cell_ids, Path(tmp))
    missing = [c for c in group.cell_ids if c not in tables]
    if missing:
        raise DataError(f"{group.family}/{group.domain}: temperature cell(s) {NOT_FINISHED}: {missing}")
    for model, tau, cid in group.cells:
        qdf, rdf = tables[cid]
        if rdf is None:
            raise DataError(f"cell {cid} ({model} at tau={tau:g}) logged no responses table")
        observed[model][tau] = observed_from_tables(qdf, rdf, items, gold_text)
    return observed


def _replicas(task_cell: dict[str, Any], items: list[int]) -> Any:
    """The items' pretraining copies when the cells' task is a replica world's (its ``replicas.json``
    sits beside the leak split), else None."""
    split = task_cell.get("leak_split")
    return replica_counts(Path(split).parent, items) if split else None


def _key(*parts: Any) -> str:
    return ".".join([METRIC_PREFIX, *(str(p) for p in parts)])


def dynamics_metrics(tables: Tables, family: str, domain: str) -> tuple[dict[str, float], dict[str, str]]:
    """Headline numbers of one group as parent-run metrics, and its regimes as tags.

    Metrics (``dynamics.<family>.<domain>.`` + ...): per tau ``tau_<tau>.{model_gain,split_gain}`` with
    ``_lo``/``_hi``, ``_collapse`` (+ ``_lo``/``_hi``); per model and group ``<model>.<group>.{E,A,alpha}`` (+
    CIs); per model and tau ``<model>.tau_<tau>.{mae,spearman}`` of the group fit's P(T) against the observed
    solve probability, all items; in a replica world, per model and count ``<model>.replicas_<c>.`` +
    ``{solve_tau_<tau>,verbatim_tau_<tau>,nll,E,A,alpha,auc_vs_0}`` (+ CIs). Tags: ``<model>.<group>.regime``.
    """
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {}
    for r in tables.gains.to_dict(orient="records"):
        for name in ("model_gain", "split_gain"):
            for suffix in ("", "_lo", "_hi", "_collapse", "_collapse_lo", "_collapse_hi"):
                metrics[_key(family, domain, f"tau_{r['tau']:g}", name + suffix)] = r[name + suffix]
    native = tables.fits[tables.fits["kind"] == "native"]
    for r in native.to_dict(orient="records"):
        for p in ("E", "A", "alpha"):
            for suffix in ("", "_lo", "_hi"):
                metrics[_key(family, domain, r["model"], r["group"], p + suffix)] = r[p + suffix]
        tags[_key(family, domain, r["model"], r["group"], "regime")] = r["regime"]
    acc = tables.accuracy
    acc = acc[(acc["subset"] == "all") & (acc["predictor"] == "p_group") & (acc["target"] == "solve")]
    for r in acc.to_dict(orient="records"):
        for m in ("mae", "spearman"):
            metrics[_key(family, domain, r["model"], f"tau_{r['tau']:g}", m)] = r[m]
    rep = tables.replicas.to_dict(orient="records") if tables.replicas is not None else []
    for r in rep:  # a replica world: the memorisation curve's points
        for name, v in r.items():
            curve = name.startswith(("solve_tau_", "verbatim_tau_", "auc_vs_0"))
            if curve or name in ("nll", "E", "A", "alpha"):
                metrics[_key(family, domain, r["model"], f"replicas_{r['replicas']}", name)] = v
    return {k: float(v) for k, v in metrics.items()}, tags


def step_outputs(done: Iterable[tuple[TemperatureGroup, dict[str, Any]]], settings: dict[str, Any],
                 out_dir: Path) -> tuple[list[Path], dict[str, float], dict[str, str]]:  # fmt: skip
    """The analysed groups' files (written under ``out_dir``), metrics and tags for the parent run;
    ``settings`` (the sweep's ``dynamics`` settings and temperatures) goes into ``summary.json``."""
    done = list(done)
    metrics: dict[str, float] = {}
    tags: dict[str, str] = {}
    summary: dict[str, Any] = {"settings": settings, "groups": {}}
    for g, res in done:
        m, t = dynamics_metrics(res["tables"], g.family, g.domain)
        metrics.update(m)
        tags.update(t)
        summary["groups"][f"{g.family}/{g.domain}"] = family_summary(res["tables"]) | {
            "items": res["items"], "leaked": res["leaked"],
            "seconds": {k: round(v, 1) for k, v in res["seconds"].items()},
        }  # fmt: skip
    files = write_run(out_dir, {f"{g.family}_{g.domain}": res["tables"] for g, res in done}, summary)
    return files, metrics, tags


def settings_record(settings: Any, temperatures: Iterable[float]) -> dict[str, Any]:
    """The ``settings`` entry of ``summary.json``: the spec's ``dynamics`` block and the temperatures."""
    return {**dataclasses.asdict(settings), "temperatures": list(temperatures)}
