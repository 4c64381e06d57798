"""The dynamics step of a sweep with ``temperatures``: its temperature cells → the survival theory's fits,
gains and predictions (:mod:`railsweep.dynamics`) → tables, figures and metrics on the sweep's parent run.

Orchestration only; every number comes from the library. Steps of :func:`run_dynamics` (driver, after the
trials, with the engine actors gone so the teacher forcing gets the CPUs):
1. per (family, domain) group (:func:`railsweep.sweep.cells.temperature_groups`), one Ray task
   (:func:`group_tables`): read the group's cells back from MLflow (per-question and responses tables),
   rebuild each model's solve probability and verbatim share per tau
   (:func:`railsweep.dynamics.observe.observed_from_tables`), teacher-force the gold chains of thought (the task's
   ``gold_chain``: GSM8K's CoT rendering, or a MATH-style solution as written) and
   the greedy answers (:func:`railsweep.dynamics.collect.force_models`) and analyse them
   (:func:`railsweep.dynamics.analyse.analyse`: fits with CIs and regimes, P(T) with alpha_eff = alpha/tau
   against the observed solve probability, contamination gain versus tau with the collapse factor);
2. write the tables (a ``domain`` column beside ``family``), the figures and ``summary.json``
   (:func:`railsweep.dynamics.output.write_run`) and log them under ``dynamics/`` of the parent run;
3. log the headline numbers as parent-run metrics (:func:`dynamics_metrics`) and the regimes as tags.

A group whose cells did not all finish is skipped and named in the result; a group whose analysis
raises is named with its error. Neither stops the other groups.
"""

from __future__ import annotations

import dataclasses
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from railsweep.sweep.cells import TemperatureGroup
from railsweep.sweep.reader import DYNAMICS_DIR
from railsweep.sweep.spec import SweepSpec
from railsweep.sweep.tracking import Tracker

METRIC_PREFIX = "dynamics"


def settings_for(spec: SweepSpec, group: TemperatureGroup) -> Any:
    """The :class:`railsweep.dynamics.settings.DynamicsSettings` of one group (readout + ``dynamics``)."""
    from railsweep.dynamics.settings import DynamicsSettings

    r, d = spec.readout, spec.dynamics_settings
    return DynamicsSettings(
        temperatures=group.temperatures, m=r.m, limit=r.limit, domain=group.domain,
        max_new_tokens=r.max_new_tokens, seed=d.seed, batch_size=r.batch_size, forcing_batch=d.forcing_batch,
        n_boot=d.n_boot, n_boot_gain=d.n_boot_gain, min_items=d.min_items, e_cut=d.e_cut, device=d.device,
        base=d.base,
    )  # fmt: skip


def group_tables(
    tracking_uri: str, experiment_id: str, group: TemperatureGroup, settings: Any, threads: int = 1
) -> dict[str, Any]:
    """Step 1 for one group (runs as a Ray task): ``{"tables": Tables, "seconds": {...}, "items", "leaked"}``."""
    import numpy as np

    from railsweep.config import CellConfig
    from railsweep.dynamics.analyse import analyse
    from railsweep.dynamics.collect import FamilyData, force_models
    from railsweep.dynamics.observe import observed_from_tables
    from railsweep.errors import DataError
    from railsweep.evaluate import load_task
    from railsweep.sweep.actors import apply_thread_budget
    from railsweep.sweep.reader import download_questions, download_responses

    apply_thread_budget(threads)
    t0 = time.time()
    tracker = Tracker(tracking_uri, experiment_id)
    runs = tracker.finished_cells(group.cell_ids)
    missing = [c for c in group.cell_ids if c not in runs]
    if missing:
        raise DataError(
            f"{group.family}/{group.domain}: temperature cell(s) without a FINISHED run: {missing}"
        )
    task = load_task(CellConfig.from_dict(dict(group.task_cell)))
    questions = list(task.questions())
    items = [q.index for q in questions]
    gold_text = [task.gold_chain(q) for q in questions]  # GSM8K: to_cot; MATH: the solution as written
    observed: dict[str, dict[float, Any]] = {model: {} for model, _ in group.adapters}
    with tempfile.TemporaryDirectory(prefix="railsweep-dynamics-") as tmp:
        for model, tau, cid in group.cells:
            run = runs[cid]
            qdf = download_questions(tracker, run, Path(tmp) / cid)
            rdf = download_responses(tracker, run, Path(tmp) / f"{cid}-responses")
            if rdf is None:
                raise DataError(f"cell {cid} ({model} at tau={tau:g}) logged no responses table")
            observed[model][tau] = observed_from_tables(qdf, rdf, items, gold_text)
    read_s = time.time() - t0
    t1 = time.time()
    adapters = dict(group.adapters)
    gold, greedy = force_models(
        group.base, adapters, [task.prompt(q) for q in questions], gold_text,
        {m: observed[m][0.0].samples for m in adapters}, settings,
        log=lambda msg: print(f"[dynamics] {group.family}/{group.domain} {msg}", file=sys.stderr, flush=True),
    )  # fmt: skip
    data = FamilyData(
        family=group.family, items=items, leaked=np.array([bool(q.leaked) for q in questions]),
        gold=gold, greedy=greedy, observed=observed,
        replicas=_replicas(group.task_cell, items),
    )  # fmt: skip
    forcing_s = time.time() - t1
    tables = analyse(data, settings)
    for name in ("positions", "fits", "predictions", "accuracy", "gains", "replicas"):
        df = getattr(tables, name)
        if df is not None:
            df.insert(1, "domain", group.domain)
    seconds = {"read": read_s, "forcing": forcing_s, "analysis": time.time() - t1 - forcing_s}
    return {"tables": tables, "seconds": seconds, "items": len(items), "leaked": int(data.leaked.sum())}


def _replicas(task_cell: dict[str, Any], items: list[int]) -> Any:
    """The items' pretraining copies when the cells' task is a replica world's (its ``replicas.json``
    sits beside the leak split), else None."""
    from railsweep.dynamics.collect import replica_counts

    split = task_cell.get("leak_split")
    return replica_counts(Path(split).parent, items) if split else None


def _key(*parts: Any) -> str:
    return ".".join([METRIC_PREFIX, *(str(p) for p in parts)])


def dynamics_metrics(tables: Any, family: str, domain: str) -> tuple[dict[str, float], dict[str, str]]:
    """Headline numbers of one group as parent-run metrics, and its regimes as tags.

    Metrics (``dynamics.<family>.<domain>.`` + ...): per tau ``tau_<tau>.{model_gain,split_gain}`` with
    ``_lo``/``_hi`` and ``_collapse`` (+ ``_lo``/``_hi``); per model and group ``<model>.<group>.{E,A,alpha}``
    with ``_lo``/``_hi``; per model and tau ``<model>.tau_<tau>.{mae,spearman}`` of P(T) from the group fit
    against the observed solve probability over all items; in a replica world, per model and count
    ``<model>.replicas_<c>.{solve_tau_<tau>,verbatim_tau_<tau>,nll,E,A,alpha,auc_vs_0}`` (+ CIs).
    Tags: ``<model>.<group>.regime``."""
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
            if name.startswith(("solve_tau_", "verbatim_tau_", "auc_vs_0")) or name in (
                "nll",
                "E",
                "A",
                "alpha",
            ):
                metrics[_key(family, domain, r["model"], f"replicas_{r['replicas']}", name)] = v
    return {k: float(v) for k, v in metrics.items()}, tags


def run_dynamics(
    spec: SweepSpec,
    groups: list[TemperatureGroup],
    tracker: Tracker,
    parent_id: str,
    *,
    num_cpus: float = 1.0,
    out: Any = sys.stdout,
) -> dict[str, Any]:
    """Steps 1–3; returns ``{"groups": [done], "skipped": {group: why}, "errors": {group: error},
    "seconds": s}``. Ray must be initialised (the driver's)."""
    import ray

    from railsweep.dynamics.output import family_summary, write_run

    t0 = time.time()
    d = spec.dynamics_settings
    task = ray.remote(group_tables).options(
        num_cpus=num_cpus, num_gpus=1 if d.device.startswith("cuda") else 0, max_retries=0
    )
    threads = max(1, int(num_cpus))
    pending = {
        f"{g.family}/{g.domain}": (g, task.remote(tracker.uri, tracker.experiment_id, g, settings_for(spec, g), threads))
        for g in groups
    }  # fmt: skip
    done: dict[str, Any] = {}
    errors: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for name, (g, ref) in pending.items():
        try:
            done[name] = (g, ray.get(ref))
        except Exception as e:  # one group's failure leaves the others' results
            cause = getattr(e, "cause", None) or e
            text = f"{type(cause).__name__}: {cause}"
            (skipped if "without a FINISHED run" in text else errors)[name] = text[:2000]
            print(f"[sweep] dynamics {name}: {text}"[:2000], file=out, flush=True)
    if done:
        metrics: dict[str, float] = {}
        tags: dict[str, str] = {}
        summary: dict[str, Any] = {
            "settings": {**dataclasses.asdict(d), "temperatures": list(groups[0].temperatures)},
            "groups": {},
        }
        for name, (g, res) in done.items():
            m, t = dynamics_metrics(res["tables"], g.family, g.domain)
            metrics.update(m)
            tags.update(t)
            summary["groups"][name] = family_summary(res["tables"]) | {
                "items": res["items"], "leaked": res["leaked"],
                "seconds": {k: round(v, 1) for k, v in res["seconds"].items()},
            }  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="railsweep-dynamics-out-") as tmp:
            files = write_run(
                Path(tmp), {f"{g.family}_{g.domain}": res["tables"] for g, res in done.values()}, summary
            )
            for f in files:
                tracker.log_artifact(parent_id, f, DYNAMICS_DIR)
        items = list(metrics.items())
        for i in range(0, len(items), 1000):  # log_batch takes at most 1000 metrics
            tracker.log(parent_id, metrics=dict(items[i : i + 1000]), tags=tags if i == 0 else None)
    seconds = time.time() - t0
    print(f"[sweep] dynamics: {len(done)} group(s) analysed and logged under {DYNAMICS_DIR}/ of the parent run "
          f"in {seconds:.0f} s" + (f"; skipped {sorted(skipped)}" if skipped else "")
          + (f"; failed {sorted(errors)}" if errors else ""), file=out, flush=True)  # fmt: skip
    return {"groups": sorted(done), "skipped": skipped, "errors": errors, "seconds": seconds}
