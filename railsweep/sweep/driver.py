"""The sweep driver: spec → engine actors → Ray Tune trials → MLflow → Tables 1–4.

Steps of :func:`run_sweep` (Ray must already be initialised by the entry script):
1. check the tracking server, resolve the spec (model paths) and expand the grid —
   any bad input fails here, before a trial or an actor exists; a miniature world not in the cache yet is
   built beside the sweep (:mod:`~railsweep.sweep.staged`): the sweep waits for its benchmark and its first
   family only;
2. open the MLflow experiment and the sweep's parent run (reused with ``resume``), tagged with the
   provenance (:func:`sweep_provenance`: on a miniature world, its config and weights digests);
3. drop cells already FINISHED in MLflow (idempotent cells);
4. create the engine actors of the families with work left (one per core on CPU, one per GPU, dealt out
   over the families: :mod:`~railsweep.sweep.plan`, :mod:`~railsweep.sweep.pool`) and the pool that leases a
   free one to each cell;
5. run one CPU-only trial per cell, clean references first, at most
   ``engines × slots_per_engine`` at a time, with a live progress line; while a world builds, steps 4-5 run in
   waves: the cells of the families trained so far, started once the build leaves a core (one per family still
   training), with engines on every core (they share the cores with the build while it trains, and take the
   cores it frees when it ends in the middle of a wave), Table 3 so far printed after each wave; the world's
   weights digest is tagged on the parent and every cell run once the build is over;
6. with ``temperatures``: kill the engines (their CPUs go to the teacher forcing) and run the dynamics step
   (one Ray task per group, :mod:`railsweep.dynamics.ray_step` over :mod:`railsweep.dynamics.step`: fits,
   gains and predictions per temperature, logged under ``dynamics/`` of the parent run);
7. publish as a Ray task (tables + figures on the parent run, :mod:`~railsweep.sweep.publish`), print the table;
8. with ``detectors``: kill the engines, run the detection step as a Ray task (truth-scored table, per-item
   Parquet and ROC figure on the parent run, :mod:`~railsweep.sweep.detection`), print its table;
9. close the parent run (FAILED when some cell failed or the dynamics step failed) and kill the engines.

A spec with ``detectors`` adds the readout cells cdd and perturb read (:mod:`~railsweep.sweep.detect_cells`)
to the grid; a detection-only spec (no strategies) has only those, and publishes no paper tables.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railsweep import provenance as prov
from railsweep.errors import ConfigError
from railsweep.miniworld.weights import weights_verdict, world_provenance
from railsweep.sweep.actors import create_progress_board, engine_name
from railsweep.sweep.cells import (
    SweepCell,
    effective_table,
    expand,
    trial_order,
)
from railsweep.sweep.detect_cells import readout_cells
from railsweep.sweep.engine_server import create_engine_actor
from railsweep.sweep.faults import Fault
from railsweep.sweep.finish import close_parent, detection_step, dynamics_step, engine_stats, publish_tables
from railsweep.sweep.plan import cluster_resources, engine_config, plan_layout, plan_resources
from railsweep.sweep.pool import create_engine_pool
from railsweep.sweep.pricing import cell_samples, sweep_questions
from railsweep.sweep.progress import ProgressPrinter
from railsweep.sweep.resolve import check_families, resolve_spec
from railsweep.sweep.spec import SweepSpec
from railsweep.sweep.staged import StagedWorld, free_cores, start_world
from railsweep.sweep.sweep_run import SweepRun, add_time, kill_actors
from railsweep.sweep.tracking import SPEC_ARTIFACT, Tracker, check_tracking_uri, provenance_tags
from railsweep.sweep.trial import SweepContext, run_cell_trial


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


def _cell_meta(cell: SweepCell) -> dict[str, Any]:
    return {
        "config": cell.config.to_dict(),
        "clean_id": cell.clean_id,
        "params": cell.flat_params(),
        "label": cell.label(),
        "run_name": cell.run_name(),
        "run_tags": cell.run_tags(),
    }


def prepare(spec: SweepSpec, table: str = "all") -> tuple[SweepSpec, list[SweepCell]]:
    """Steps 1: validation that needs no Ray (tracking server, model paths, grid, detection readouts)."""
    resolved, cells, _ = _prepare(spec, table)
    return resolved, cells


def _prepare(
    spec: SweepSpec, table: str, staged: StagedWorld | None = None
) -> tuple[SweepSpec, list[SweepCell], list[dict[str, str]]]:
    check_tracking_uri(spec.tracking.uri)
    if staged is None:
        resolved = resolve_spec(spec)
    else:  # the world's paths to be: each family's files are checked when it is ready
        staged.wait_for_data()
        resolved = resolve_spec(spec, staged.provisional(), check=False)
    cells = expand(resolved, table)
    readouts: list[dict[str, str]] = []
    if resolved.detectors:
        extra, readouts = readout_cells(resolved)
        have = {c.cell_id for c in cells}
        cells += [c for c in extra if c.cell_id not in have]
    return resolved, cells, readouts


def run_sweep(
    spec: SweepSpec,
    *,
    table: str = "all",
    resume: bool = False,
    storage_path: str | None = None,
    progress_interval: float = 10.0,
    publish: bool = True,
    out=sys.stdout,
    params: dict[str, str] | None = None,
    fault: Fault | None = None,
) -> SweepOutcome:
    """Run ``spec`` on the Ray instance this process joined (steps in the module docstring).

    ``params``: more parameters of a new parent run (the sweep job logs its price,
    :func:`railsweep.sweep.pricing.price_params`). ``fault`` is a test hook (:mod:`railsweep.sweep.faults`): a
    fault-injection test's fault, fired by the progress board at the k-th finished cell; None (always, outside
    those tests) changes nothing.
    """
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
        failed, stats = _run_waves(run, engines, pending, len(skipped), fault, staged, storage_path,
                                   progress_interval)  # fmt: skip
        if staged is not None:
            t0 = time.perf_counter()
            world = staged.result()  # the build's last adapters may still be training
            add_time(run, "world_wait_s", time.perf_counter() - t0)
            _record_world(run, world)
        dynamics = dynamics_step(run, engines) if table == "all" and publish else None
        if publish and (spec.strategies or spec.temperatures):
            publish_tables(run)
        if spec.detectors:
            kill_actors(engines)  # the model-side detectors get the engines' CPUs
            engines = {}
            detection_step(run)
        wall = close_parent(run, failed, skipped, dynamics)
    except BaseException:
        try:
            run.tracker.terminate(run.parent_id, "KILLED")
        finally:
            kill_actors(engines)
            if staged is not None and staged.world is None:
                run.say("[sweep] the sweep failed; the world's build goes on until it is cached (Ctrl-C stops it)")
        raise
    kill_actors(engines)
    return SweepOutcome(run.parent_id, run.experiment_id, [c.cell_id for c in cells], skipped, failed, wall, stats,
                        run.tables, run.timings, dynamics)  # fmt: skip


def _open_parent(
    spec: SweepSpec,
    table: str,
    cells: list[SweepCell],
    readouts: list[dict[str, str]],
    *,
    resume: bool,
    params: dict[str, str] | None,
    out: Any,
    t_start: float,
    staged: StagedWorld | None = None,
) -> SweepRun:
    """Step 2: the experiment and the sweep's parent run; a new parent logs its parameters and the spec."""
    sweep_id = spec.sweep_id + ("" if table == "all" else f"-t{table}")
    tracker = Tracker(spec.tracking.uri)
    exp_id = tracker.ensure_experiment(spec.tracking.experiment)
    provenance = sweep_provenance(spec, cells, staged)
    run_tags = provenance_tags(provenance)
    parent_id, reused = tracker.parent_run(
        sweep_id,
        run_name=f"{spec.name}-table{table}-{time.strftime('%Y%m%d-%H%M%S')}",
        tags=run_tags,
        resume=resume,
    )
    if not reused:
        tracker.log(parent_id, params={**_parent_params(spec, table, cells), **(params or {})})
        with tempfile.TemporaryDirectory() as tmp:
            f = Path(tmp) / SPEC_ARTIFACT
            f.write_text(
                json.dumps({"spec": spec.to_dict(), "cells": [_cell_meta(c) for c in cells],
                            **({"detection_readouts": readouts} if spec.detectors else {})}, indent=1)  # fmt: skip
            )
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


def sweep_provenance(
    spec: SweepSpec, cells: list[SweepCell], staged: StagedWorld | None = None
) -> dict[str, Any]:
    """:func:`railsweep.provenance.collect` over the cells' data files; a sweep on a miniature world also
    records the world (config digest and weights digest: two builds of one config can hold other models;
    a world still building has no weights digest yet: :func:`_record_world` adds it)."""
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
    for r in [*run.tracker.cell_runs(run.parent_id)]:
        run.tracker.log(r.info.run_id, tags=tags)
    run.tracker.log(run.parent_id, tags=tags)
    _say_weights(run, record)


def _parent_params(spec: SweepSpec, table: str, cells: list[SweepCell]) -> dict[str, Any]:
    return {"preset": spec.name, "table": table, "n_cells": len(cells), "m": spec.readout.m,
            "temperature": spec.readout.temperature, "B": spec.scoring.B, "n_boot": spec.scoring.n_boot,
            "families": ",".join(f.name for f in spec.families), "domains": ",".join(spec.domains),
            "strategies": ",".join(s.name for s in spec.strategies), "engine_backend": spec.engine.backend,
            "limit": spec.readout.limit,
            **({"detectors": ",".join(d.name for d in spec.detectors)} if spec.detectors else {})}  # fmt: skip


def _pending_cells(run: SweepRun) -> tuple[list[SweepCell], list[str]]:
    """Step 3: (cells to run, ids of cells already FINISHED in MLflow)."""
    finished = run.tracker.finished_cells(c.cell_id for c in run.cells)
    pending = [c for c in run.cells if c.cell_id not in finished]
    skipped = [c.cell_id for c in run.cells if c.cell_id in finished]
    if skipped:
        run.say(f"[sweep] {len(skipped)} cell(s) already FINISHED in MLflow: not recomputed")
    return pending, skipped


def _run_waves(
    run: SweepRun,
    engines: dict[str, Any],
    pending: list[SweepCell],
    n_skipped: int,
    fault: Fault | None,
    staged: StagedWorld | None,
    storage_path: str | None,
    progress_interval: float,
) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Steps 4-5, in one wave, or, while ``staged`` builds, one wave per set of ready families (each on the
    cores the build leaves; the previous wave's engines killed first); returns (failed cell ids, engine stats)."""
    left, failed, stats, board = list(pending), [], {}, None
    while True:
        wave, cpus = _next_wave(run, left, staged)
        if stats or board is not None:  # a later wave: the previous engines' figures, then their cores
            stats.update(engine_stats(engines))
            kill_actors(engines)
            engines.clear()
        pool, board, plan = _start_engines(run, engines, wave, n_skipped, fault, board, cpus)
        failed += _run_trials(run, wave, pool, board, plan, storage_path, progress_interval)
        left = [c for c in left if c not in wave]
        if not left:
            stats.update(engine_stats(engines))
            return failed, stats
        _show_so_far(run)


def _next_wave(run: SweepRun, left: list[SweepCell], staged: StagedWorld | None) -> tuple[list[SweepCell], float | None]:
    """The cells to run next and the cores their engines may use (None: the cluster's): all of them, or, while
    a world builds, those of ready families — as many families as cores are free of the build, waiting for one if
    none is — with engines on every core, so the cores the build frees when it ends in the middle of the wave do
    not wait for the wave. Until then the engines share the cores with the build: Ray's workers run at nice 15,
    but on a Linux kernel with autogroup scheduling (the usual default) a nice value ranks a process only
    against its own session's, and the workers are in Ray's session, the build in the driver's."""
    if staged is None:
        return left, None
    while True:
        while staged.wait(timeout=0):  # every stage landed meanwhile
            pass
        if staged.world is not None:
            check_families(run.spec, {c.family for c in left})
            return left, None
        cpus = cluster_resources()[0]
        cores = free_cores(cpus, staged.building)
        ready = [f.name for f in run.spec.families if f.name in staged.ready and any(c.family == f.name for c in left)]
        if ready and cores >= 1:
            take = set(ready[:cores])
            check_families(run.spec, take)
            run.say(f"[sweep] world: {', '.join(sorted(staged.ready))} ready, {staged.building} famil"
                    f"{'y' if staged.building == 1 else 'ies'} still training: cells of {', '.join(sorted(take))} "
                    f"on {cores} free core(s), engines on all {cpus:g}")  # fmt: skip
            return [c for c in left if c.family in take], cpus
        t0 = time.perf_counter()
        staged.wait()
        add_time(run, "world_wait_s", time.perf_counter() - t0)


def _show_so_far(run: SweepRun) -> None:
    """Between waves: Table 3 of the cells finished so far (published again, whole, at the end)."""
    if run.spec.strategies and run.table in ("all", "3"):
        run.say("[sweep] Table 3 so far (the families still training fill the rest):")
        publish_tables(run, partial=True)


def _start_engines(
    run: SweepRun,
    engines: dict[str, Any],
    pending: list[SweepCell],
    n_skipped: int,
    fault: Fault | None,
    board: Any = None,
    cpus: float | None = None,
) -> tuple[Any, Any, dict[str, Any]]:
    """Step 4: the engine actors, added to ``engines`` by name as each is created (so that a failure part-way
    still kills the ones that exist); returns (the pool that leases them, the progress board, the plan).
    ``board``: a previous wave's progress board, kept; ``cpus``: the cores the wave may use."""
    import ray  # optional heavy dependency: the sweep's

    spec = run.spec
    layout = plan_layout(spec, pending, cpus)
    plan = plan_resources(spec, max(sum(layout.values()), 1), cpus)
    families = {f.name: f for f in spec.families}
    names = {engine_name(run.sweep_id, fam, rep): families[fam] for fam, k in layout.items() for rep in range(k)}
    if board is None:
        board = create_progress_board(
            len(run.cells), n_skipped, fault and fault.arm(driver_pid=os.getpid(), engines=tuple(names))
        )
    # an engine that can change its model moves to the family with the most cells left when its own has none
    # (railsweep.sweep.pool); vLLM's engines keep their GPU memory, so they stay with their family
    movable = spec.engine.backend == "transformers" and len(layout) > 1
    cells = {fam: sum(c.family == fam for c in pending) for fam in layout} if movable else None
    configs = {fam: engine_config(spec, families[fam], plan["device"]) for fam in layout}
    pool = create_engine_pool({fam: [n for n, f in names.items() if f.name == fam] for fam in layout}, cells)
    for name, fam in names.items():
        engines[name] = create_engine_actor(
            name, configs[fam.name], num_gpus=plan["num_gpus"],
            num_cpus=plan["engine_cpus"], threads=plan["threads"],
            max_restarts=spec.resources.max_restarts, max_task_retries=spec.resources.max_task_retries,
            cache_dir=str(Path(spec.data_dir).parent / "strategy-cache") if spec.data_dir else None,
            prompts_per_call=spec.readout.batch_size, omp_wait_policy=plan["omp_wait_policy"],
            family_configs=configs if movable else None,
        )  # fmt: skip
    waited = run.timings.get("world_wait_s", 0.0)  # for a free core, before the first wave
    run.timings.setdefault("setup_s", time.perf_counter() - run.t_start - waited)
    if engines:
        ready = ray.get([e.ready.remote() for e in engines.values()], timeout=3600)
        shares = ", ".join(f"{fam} x{k}" for fam, k in layout.items())
        run.say(f"[sweep] {len(engines)} engine(s) ({shares}), each {plan['engine_cpus']} CPU(s) and "
                f"{ready[0]['threads']} thread(s) (OMP_WAIT_POLICY={ready[0]['omp_wait_policy']}), batches of up "
                f"to {ready[0]['max_batch_size']} rows, {spec.readout.batch_size} prompts per call; "
                f"trials {plan['trial_cpus']} CPU each, at most {plan['max_concurrent']} at a time")  # fmt: skip
    run.timings.setdefault("engines_ready_s", time.perf_counter() - run.t_start - run.timings["setup_s"] - waited)
    return pool, board, plan


def _run_trials(
    run: SweepRun,
    pending: list[SweepCell],
    pool: Any,
    board: Any,
    plan: dict[str, Any],
    storage_path: str | None,
    progress_interval: float,
) -> list[str]:
    """Step 5: one Tune trial per pending cell, with the live progress line; returns the failed cells' ids."""
    from ray import tune  # optional heavy dependency: the sweep's

    spec, failed = run.spec, []
    t_trials = time.perf_counter()
    if pending:
        ctx = SweepContext(
            tracking_uri=spec.tracking.uri, experiment_id=run.experiment_id, parent_id=run.parent_id,
            sweep_id=run.sweep_id, cells={c.cell_id: _cell_meta(c) for c in run.cells}, pool=pool, board=board,
            B=spec.scoring.B, n_boot=spec.scoring.n_boot, score_seed=spec.scoring.seed,
            clean_wait_s=spec.resources.clean_wait_s, run_tags=run.run_tags, threads=plan["trial_threads"],
        )  # fmt: skip
        trainable = tune.with_resources(tune.with_parameters(run_cell_trial, ctx=ctx), {"cpu": plan["trial_cpus"]})
        tuner = tune.Tuner(
            trainable,
            param_space={"cell_id": tune.grid_search([c.cell_id for c in trial_order(pending)])},
            tune_config=tune.TuneConfig(max_concurrent_trials=plan["max_concurrent"], reuse_actors=True),
            run_config=tune.RunConfig(
                name=f"railsweep-{run.sweep_id}-{int(time.time())}",
                storage_path=storage_path,
                failure_config=tune.FailureConfig(max_failures=spec.resources.max_failures),
                verbose=0,
            ),
        )
        # Tune's newer console output prints an experiment box and a TensorBoard hint whatever `verbose` says; its
        # classic output at verbose=0 prints nothing, and the sweep's own progress line says what runs
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
        n_questions = sweep_questions(spec).n
        expected = sum(cell_samples(c, n_questions) for c in pending)
        with ProgressPrinter(board, interval=progress_interval, out=run.out, expected_samples=expected):
            results = tuner.fit()
        for res in results:
            if res.error is not None:
                cid = res.config.get("cell_id") if res.config else None
                failed.append(cid)
                run.say(f"[sweep] cell {cid} FAILED: {type(res.error).__name__}: {res.error}"[:2000])
    add_time(run, "trials_s", time.perf_counter() - t_trials)  # waves add up
    return failed
