"""The sweep driver: spec → engine actors → Ray Tune trials → MLflow → Tables 1–4.

Steps of :func:`run_sweep` (Ray must already be initialised by the entry script):
1. check the tracking server, resolve the spec (model paths) and expand the grid, with the detectors' readout
   cells: any bad input fails here, before a trial or an actor exists; a miniature world not in the cache is
   built beside the sweep (:mod:`~railsweep.sweep.run.staged`), which waits for its first family only;
2. open the MLflow experiment and the sweep's parent run (reused with ``resume``), tagged with the provenance;
3. drop cells already FINISHED in MLflow (idempotent cells);
4. create the engine actors of the families with work left and the pool that leases a free one to each cell;
5. run one CPU-only trial per cell, clean references first, at most ``engines × slots_per_engine`` at a time,
   with a live progress line; while a world builds, steps 4-5 run in waves (:mod:`~railsweep.sweep.run.waves`)
   and the world's weights digest is tagged on every run once the build is over;
6. with ``temperatures``: kill the engines (their CPUs go to the teacher forcing), run the dynamics step;
7. publish the tables and figures on the parent run as a Ray task, print the table;
8. with ``detectors``: kill the engines, run the detection step as a Ray task, print its table;
9. close the parent run (FAILED when some cell failed or the dynamics step failed) and kill the engines.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railsweep import provenance as prov
from railsweep.errors import ConfigError
from railsweep.miniworld.weights import weights_verdict, world_provenance
from railsweep.sweep.plan.cells import SweepCell, effective_table
from railsweep.sweep.plan.detect_cells import grid_cells
from railsweep.sweep.run.faults import Fault
from railsweep.sweep.run.finish import close_parent, detection_step, dynamics_step, publish_tables
from railsweep.sweep.run.staged import StagedWorld, start_world
from railsweep.sweep.run.sweep_run import SweepRun, add_time, cell_meta, kill_actors
from railsweep.sweep.run.waves import run_waves
from railsweep.sweep.spec.resolve import resolve_spec
from railsweep.sweep.spec.sweep_spec import SweepSpec
from railsweep.sweep.tracking.tracker import SPEC_ARTIFACT, Tracker, check_tracking_uri, provenance_tags


@dataclass
class SweepOutcome:
    parent_run_id: str
    experiment_id: str
    cells: list[str]
    skipped: list[str]
    failed: list[str]
    wall_s: float
    engine_stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)  # table name → markdown
    timings: dict[str, float] = field(default_factory=dict)  # seconds per driver phase
    dynamics: dict[str, Any] | None = None  # the dynamics step's result (sweeps with temperatures)


def _prepare(spec: SweepSpec, table: str, staged: StagedWorld | None
             ) -> tuple[SweepSpec, list[SweepCell], list[dict[str, str]]]:  # fmt: skip
    """Step 1 but the tracking server's check: the spec resolved, its cells and the detectors' readouts."""
    if staged is None:
        resolved = resolve_spec(spec)
    else:  # the world's paths to be: each family's files are checked when it is ready
        staged.wait_for_data()
        resolved = resolve_spec(spec, staged.provisional(), check=False)
    cells, readouts = grid_cells(resolved, table)
    return resolved, cells, readouts


def run_sweep(spec: SweepSpec, *, table: str = "all", resume: bool = False, progress_interval: float = 10.0,
              out=sys.stdout, params: dict[str, str] | None = None,
              fault: Fault | None = None) -> SweepOutcome:  # fmt: skip
    """Run ``spec`` on the Ray instance this process joined (steps in the module docstring). ``params``: more
    parameters of a new parent run (the job's price); ``fault``: the fault-injection tests' hook."""
    import ray  # optional heavy dependency: the sweep runs on the Ray its entry point started

    if not ray.is_initialized():
        raise ConfigError("run_sweep needs Ray: call ray.init() (the sweep job, railsweep.sweep.job, does) first")
    t_start = time.perf_counter()
    table = effective_table(spec, table)
    check_tracking_uri(spec.tracking.uri)  # before a world starts building
    world = start_world(spec.miniworld_preset, spec.cache_dir) if spec.source == "miniworld" else None
    staged = world if isinstance(world, StagedWorld) else None
    spec, cells, readouts = _prepare(spec, table, staged)
    if staged is not None:
        _first_family(staged, out)
    run = _open_parent(spec, table, cells, readouts, resume=resume, params=params, out=out, t_start=t_start,
                       staged=staged)  # fmt: skip
    pending, skipped = _pending_cells(run)
    engines: dict[str, Any] = {}
    try:
        failed, stats = run_waves(run, engines, pending, len(skipped), fault, staged, progress_interval)
        wall, dynamics = _after_trials(run, engines, failed, skipped, staged)
    except BaseException:
        try:
            run.tracker.stop_sweep(run.parent_id)
        finally:
            kill_actors(engines)
            if staged is not None and staged.world is None:
                run.say("[sweep] the sweep failed; the world's build goes on until it is cached (Ctrl-C stops it)")
        raise
    kill_actors(engines)
    return SweepOutcome(run.parent_id, run.experiment_id, [c.cell_id for c in cells], skipped, failed, wall, stats,
                        run.tables, run.timings, dynamics)  # fmt: skip


def _after_trials(run: SweepRun, engines: dict[str, Any], failed: list[str], skipped: list[str],
                  staged: StagedWorld | None) -> tuple[float, dict[str, Any] | None]:  # fmt: skip
    """Steps 6-9 but the engines' last kill; returns (the wall time, the dynamics step's result or None)."""
    if staged is not None:
        t0 = time.perf_counter()
        world = staged.result()  # the build's last adapters may still be training
        add_time(run, "world_wait_s", time.perf_counter() - t0)
        _record_world(run, world)
    dynamics = dynamics_step(run, engines) if run.table == "all" else None
    if run.spec.strategies or run.spec.temperatures:
        publish_tables(run)
    if run.spec.detectors:
        kill_actors(engines)
        engines.clear()
        detection_step(run)
    return close_parent(run, failed, skipped, dynamics), dynamics


def _open_parent(spec: SweepSpec, table: str, cells: list[SweepCell], readouts: list[dict[str, str]], *,
                 resume: bool, params: dict[str, str] | None, out: Any, t_start: float,
                 staged: StagedWorld | None) -> SweepRun:  # fmt: skip
    """Step 2: the experiment and the sweep's parent run; a new parent logs its parameters and the spec."""
    sweep_id = spec.sweep_id + ("" if table == "all" else f"-t{table}")
    tracker = Tracker(spec.tracking.uri)
    exp_id = tracker.ensure_experiment(spec.tracking.experiment)
    provenance = sweep_provenance(spec, cells, staged)
    run_tags = provenance_tags(provenance)
    run_name = f"{spec.name}-table{table}-{time.strftime('%Y%m%d-%H%M%S')}"
    parent_id, reused = tracker.parent_run(sweep_id, run_name=run_name, tags=run_tags, resume=resume)
    if not reused:
        tracker.log(parent_id, params={**_parent_params(spec, table, cells), **(params or {})})
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / SPEC_ARTIFACT
            f.write_text(json.dumps({"spec": spec.to_dict(), "cells": [cell_meta(c) for c in cells],
                                     **({"detection_readouts": readouts} if spec.detectors else {})},
                                    indent=1))  # fmt: skip
            tracker.log_artifact(parent_id, f)
    run = SweepRun(spec, table, cells, readouts, tracker, exp_id, parent_id, sweep_id, run_tags, out, t_start)
    run.say(f"[sweep] {spec.name}: {len(cells)} cells, parent run {parent_id} ({'resumed' if reused else 'new'}), "
            f"MLflow {spec.tracking.uri} experiment {spec.tracking.experiment!r}")  # fmt: skip
    if "weights_digest" in provenance.get("world", {}):
        _say_weights(run, provenance["world"])
    return run


def _say_weights(run: SweepRun, world: dict[str, Any]) -> None:
    """The docs' figures hold for the documented build only: say which build this is."""
    documented, line = weights_verdict(world["preset"], world["digest"], world["weights_digest"])
    run.say(f"[sweep] {'warning: ' if documented is False else ''}{line}")


def sweep_provenance(spec: SweepSpec, cells: list[SweepCell],
                     staged: StagedWorld | None = None) -> dict[str, Any]:  # fmt: skip
    """:func:`railsweep.provenance.collect` over the cells' data files, and the miniature world's config and
    weights digests (two builds of one config can hold other models; a world still building has none yet)."""
    p = prov.collect(cells[0].config.task_files() if cells else [Path(spec.data_dir) / "test.jsonl"])
    if staged is not None and staged.world is None:
        p["world"] = {"root": str(staged.root), "preset": staged.preset, "digest": staged.config.digest()}
    elif spec.source == "miniworld":  # resolved: data_dir is the world's data folder
        p["world"] = world_provenance(Path(spec.data_dir).parent)
    return p


def _first_family(staged: StagedWorld, out: Any) -> None:
    """Block until the world being built has its first family (the sweep's first cells need one)."""
    print(f"[sweep] world {staged.root.name} is being built beside the sweep: its first cells start when its "
          "first family is ready", file=out, flush=True)  # fmt: skip
    while not staged.ready and staged.world is None:
        staged.wait()


def _record_world(run: SweepRun, world: Any) -> None:
    """A staged world's provenance (with its weights digest) tagged on the parent run and every cell run."""
    record = world_provenance(world.root)
    tags = {f"world.{k}": str(v) for k, v in record.items()}
    run.run_tags.update(tags)
    for r in run.tracker.cell_runs(run.parent_id):
        run.tracker.log(r.info.run_id, tags=tags)
    run.tracker.log(run.parent_id, tags=tags)
    _say_weights(run, record)


def _parent_params(spec: SweepSpec, table: str, cells: list[SweepCell]) -> dict[str, Any]:
    return {"preset": spec.name, "table": table, "n_cells": len(cells), "m": spec.readout.m,
            "temperature": spec.readout.temperature, "B": spec.scoring.B, "n_boot": spec.scoring.n_boot,
            "families": ",".join(f.name for f in spec.families), "domains": ",".join(spec.domains),
            "strategies": ",".join(s.name for s in spec.strategies), "engine_backend": spec.engine.backend,
            "limit": spec.readout.limit,
            **({"detectors": ",".join(d.name for d in spec.detectors)} if spec.detectors else {}),
            **({"task": spec.readout.task} if spec.readout.task else {}),
            **({"task_group": spec.task_group} if spec.task_group else {})}  # fmt: skip


def _pending_cells(run: SweepRun) -> tuple[list[SweepCell], list[str]]:
    """Step 3: (cells to run, ids of cells already FINISHED in MLflow)."""
    finished = run.tracker.finished_cells(c.cell_id for c in run.cells)
    pending = [c for c in run.cells if c.cell_id not in finished]
    skipped = [c.cell_id for c in run.cells if c.cell_id in finished]
    if skipped:
        run.say(f"[sweep] {len(skipped)} cell(s) already FINISHED in MLflow: not recomputed")
    return pending, skipped
