"""The sweep's steps after its trials (steps 6–9 of :mod:`railsweep.sweep.run.driver`)."""

from __future__ import annotations

import functools
import tempfile
import time
from pathlib import Path
from typing import Any

from railsweep.dynamics.output import DYNAMICS_DIR
from railsweep.dynamics.ray_step import run_groups
from railsweep.dynamics.step import settings_record, step_outputs
from railsweep.sweep.plan.cells import settings_for, temperature_groups
from railsweep.sweep.plan.resources import cluster_resources
from railsweep.sweep.run.detection import run_detection
from railsweep.sweep.run.sweep_run import SweepRun, add_time, kill_actors
from railsweep.sweep.tracking.publish import publish_sweep
from railsweep.sweep.tracking.reader import cell_tables


def engine_stats(engines: dict[str, Any]) -> dict[str, dict[str, Any]]:
    import ray  # optional heavy dependency: the sweep's

    stats = {}
    for name, handle in engines.items():
        try:
            stats[name] = ray.get(handle.stats.remote(), timeout=60)
        except Exception as e:  # a dead engine must not hide the sweep's results
            stats[name] = {"error": str(e)}
    return stats


def dynamics_step(run: SweepRun, engines: dict[str, Any]) -> dict[str, Any] | None:
    """Step 6: every temperature group analysed as a Ray task and logged on the parent run; None without."""
    if not (groups := temperature_groups(run.spec)):
        return None
    kill_actors(engines)  # idle now: their CPUs go to the teacher forcing
    t0 = time.perf_counter()
    cpus = cluster_resources()[0]  # one task per group, the cluster's CPUs shared out (at least 1 each)
    per_group = min(cpus, max(1.0, float(int(cpus // len(groups)))))
    settings = {f"{g.family}/{g.domain}": settings_for(run.spec, g) for g in groups}
    read = functools.partial(cell_tables, run.tracker.uri, run.tracker.experiment_id)
    res = run_groups(groups, settings, read, num_cpus=per_group, out=run.out)
    if res.done:
        record = settings_record(run.spec.dynamics_settings, groups[0].temperatures)
        with tempfile.TemporaryDirectory(prefix="railsweep-dynamics-out-") as tmp:
            files, metrics, tags = step_outputs(res.done.values(), record, Path(tmp))
            for f in files:
                run.tracker.log_artifact(run.parent_id, f, DYNAMICS_DIR)
        items = list(metrics.items())
        for i in range(0, len(items), 1000):  # log_batch takes at most 1000 metrics
            run.tracker.log(run.parent_id, metrics=dict(items[i : i + 1000]), tags=tags if i == 0 else None)
    seconds = time.perf_counter() - t0
    run.timings["dynamics_s"] = seconds
    run.say(f"[sweep] dynamics: {len(res.done)} group(s) analysed and logged under {DYNAMICS_DIR}/ of the parent "
            f"run in {seconds:.0f} s" + (f"; skipped {sorted(res.skipped)}" if res.skipped else "")
            + (f"; failed {sorted(res.errors)}" if res.errors else ""))  # fmt: skip
    return {"groups": sorted(res.done), "skipped": res.skipped, "errors": res.errors, "seconds": seconds}


def publish_tables(run: SweepRun, partial: bool = False) -> None:
    """Step 7: Tables 1–4 and figures on the parent run (a Ray task); print the table asked for (and, unless
    ``partial``, the cells with no FINISHED run)."""
    import ray  # optional heavy dependency: the sweep's

    t0 = time.perf_counter()
    task = ray.remote(publish_sweep).options(num_cpus=0.25, max_retries=1)
    published = ray.get(task.remote(run.spec.tracking.uri, run.parent_id))
    add_time(run, "publish_s", time.perf_counter() - t0)  # the tables between waves too
    run.tables.update(published["markdown"])
    shown = {"all": "table3"}.get(run.table, f"table{run.table}")
    if shown in run.tables:
        print(f"\n{shown.replace('table', 'Table ')} (SA-PPG etc. with 95% CIs):\n{run.tables[shown]}", file=run.out)
    if "paired_identity" in run.tables:
        print(f"\n{run.tables['paired_identity']}", file=run.out)
    if published.get("missing") and not partial:
        run.say(f"[sweep] cells without a FINISHED run: {published['missing']}")


def detection_step(run: SweepRun) -> None:
    """Step 8: the detectors, truth-scored, on the parent run (:mod:`~railsweep.sweep.run.detection`)."""
    t0 = time.perf_counter()
    detected = run_detection(run.spec, run.experiment_id, run.parent_id, run.readouts)
    run.tables["detection"] = detected["markdown"]
    run.timings["detect_s"] = time.perf_counter() - t0
    print(f"\nDetection against the truth ({len(run.spec.detectors)} detector(s), "
          f"{detected['n_rows']} item rows):\n{detected['markdown']}", file=run.out)  # fmt: skip
    for line in detected["skipped"]:
        run.say(f"[sweep] detection skipped {line}")


def close_parent(run: SweepRun, failed: list[str], skipped: list[str], dynamics: dict[str, Any] | None) -> float:
    """Step 9: wall time (returned) and phase timings on the parent run, FAILED if a cell or dynamics did."""
    t = run.timings
    wall = time.perf_counter() - run.t_start
    t["other_s"] = wall - sum(v for k, v in t.items() if k != "other_s")  # engine stats, kills, tagging the world
    dyn_failed = bool(dynamics and dynamics["errors"])
    run.tracker.log(run.parent_id, metrics={
        "wall_s": wall, "cells_failed": float(len(failed)), "cells_skipped": float(len(skipped)),
        "cells_total": float(len(run.cells)), **{f"time.{k}": v for k, v in t.items()}},
        tags={**({"railsweep.failed_cells": ",".join(map(str, failed))} if failed else {}),
              **({"railsweep.dynamics_errors": str(dynamics["errors"])} if dyn_failed else {})}
        or None)  # fmt: skip
    run.tracker.terminate(run.parent_id, "FAILED" if failed or dyn_failed else "FINISHED")
    return wall
