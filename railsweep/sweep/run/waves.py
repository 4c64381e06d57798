"""Steps 4-5 of a sweep (:func:`railsweep.sweep.run.driver.run_sweep`): the engine actors and one Ray Tune trial per
cell, in one wave, or one wave per set of families trained so far while a world builds."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from railsweep.sweep.plan.cells import SweepCell, trial_order
from railsweep.sweep.plan.pool import create_engine_pool
from railsweep.sweep.plan.price_inputs import sweep_questions
from railsweep.sweep.plan.pricing import cell_samples
from railsweep.sweep.plan.resources import cluster_resources, engine_config, plan_layout, plan_resources
from railsweep.sweep.run.actors import create_progress_board, engine_name
from railsweep.sweep.run.engine_server import create_engine_actor
from railsweep.sweep.run.faults import Fault
from railsweep.sweep.run.finish import engine_stats, publish_tables
from railsweep.sweep.run.progress import ProgressPrinter
from railsweep.sweep.run.staged import StagedWorld, free_cores
from railsweep.sweep.run.sweep_run import SweepRun, add_time, kill_actors, trial_cells
from railsweep.sweep.run.trial import SweepContext, run_cell_trial


def run_waves(run: SweepRun, engines: dict[str, Any], pending: list[SweepCell], n_skipped: int,
              fault: Fault | None, staged: StagedWorld | None,
              progress_interval: float) -> tuple[list[str], dict[str, dict[str, Any]]]:  # fmt: skip
    """Steps 4-5 in waves (the previous wave's engines killed first); returns (failed cells, engine stats)."""
    left, failed, stats, board = list(pending), [], {}, None
    while True:
        wave, cpus = _next_wave(run, left, staged)
        if stats or board is not None:  # a later wave: the previous engines' figures, then their cores
            stats.update(engine_stats(engines))
            kill_actors(engines)
            engines.clear()
        pool, board, plan = _start_engines(run, engines, wave, n_skipped, fault, board, cpus)
        failed += _run_trials(run, wave, pool, board, plan, progress_interval)
        left = [c for c in left if c not in wave]
        if not left:
            stats.update(engine_stats(engines))
            return failed, stats
        _show_so_far(run)


def _next_wave(run: SweepRun, left: list[SweepCell],
               staged: StagedWorld | None) -> tuple[list[SweepCell], float | None]:  # fmt: skip
    """The cells to run next and the cores their engines may use (None: the cluster's): all of them, or, while
    a world builds, those of ready families, one per core free of the build (waiting for one), with engines on
    every core so that the cores the build frees mid-wave are used. Ray's workers run at nice 15, but under
    Linux autogroup scheduling a nice value ranks a process only within its own session, so they share the
    cores with the build meanwhile."""
    if staged is None:
        return left, None
    while True:
        while staged.wait(timeout=0):  # every stage landed meanwhile
            pass
        if staged.world is not None:
            run.spec.check_paths(only={c.family for c in left})
            return left, None
        cpus = cluster_resources()[0]
        cores = free_cores(cpus, staged.building)
        ready = [f.name for f in run.spec.families
                 if f.name in staged.ready and any(c.family == f.name for c in left)]
        if ready and cores >= 1:
            take = set(ready[:cores])
            run.spec.check_paths(only=take)
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


def _start_engines(run: SweepRun, engines: dict[str, Any], pending: list[SweepCell], n_skipped: int,
                   fault: Fault | None, board: Any,
                   cpus: float | None) -> tuple[Any, Any, dict[str, Any]]:  # fmt: skip
    """Step 4: the engine actors, added to ``engines`` one by one (a failure part-way still kills them)."""
    import ray  # optional heavy dependency: the sweep's

    spec = run.spec
    layout = plan_layout(spec, pending, cpus)
    plan = plan_resources(spec, max(sum(layout.values()), 1), cpus)
    families = {f.name: f for f in spec.families}
    names = {engine_name(run.sweep_id, fam, rep): families[fam]
             for fam, k in layout.items() for rep in range(k)}
    if board is None:
        armed = fault and fault.arm(driver_pid=os.getpid(), engines=tuple(names))
        board = create_progress_board(len(run.cells), n_skipped, armed)
    # an engine that can change its model moves to the family with the most cells left when its own has none
    # (railsweep.sweep.plan.pool); vLLM's engines keep their GPU memory, so they stay with their family
    movable = spec.engine.backend == "transformers" and len(layout) > 1
    cells = {fam: sum(c.family == fam for c in pending) for fam in layout} if movable else None
    configs = {fam: engine_config(spec, families[fam], plan["device"]) for fam in layout}
    pool = create_engine_pool({fam: [n for n, f in names.items() if f.name == fam] for fam in layout}, cells)
    for name, fam in names.items():
        engines[name] = create_engine_actor(
            name, configs[fam.name], num_gpus=plan["num_gpus"], num_cpus=plan["engine_cpus"],
            threads=plan["threads"],
            max_restarts=spec.resources.max_restarts, max_task_retries=spec.resources.max_task_retries,
            cache_dir=str(Path(spec.data_dir).parent / "strategy-cache") if spec.data_dir else None,
            prompts_per_call=spec.readout.batch_size, omp_wait_policy=plan["omp_wait_policy"],
            family_configs=configs if movable else None)  # fmt: skip
    waited = run.timings.get("world_wait_s", 0.0)  # for a free core, before the first wave
    run.timings.setdefault("setup_s", time.perf_counter() - run.t_start - waited)
    if engines:
        ready = ray.get([e.ready.remote() for e in engines.values()], timeout=3600)
        shares = ", ".join(f"{fam} x{k}" for fam, k in layout.items())
        run.say(f"[sweep] {len(engines)} engine(s) ({shares}), each {plan['engine_cpus']} CPU(s) and "
                f"{ready[0]['threads']} thread(s) (OMP_WAIT_POLICY={ready[0]['omp_wait_policy']}), batches of up "
                f"to {ready[0]['max_batch_size']} rows, {spec.readout.batch_size} prompts per call; "
                f"trials {plan['trial_cpus']} CPU each, at most {plan['max_concurrent']} at a time")  # fmt: skip
    run.timings.setdefault("engines_ready_s",
                           time.perf_counter() - run.t_start - run.timings["setup_s"] - waited)  # fmt: skip
    return pool, board, plan


def _run_trials(run: SweepRun, pending: list[SweepCell], pool: Any, board: Any, plan: dict[str, Any],
                progress_interval: float) -> list[str]:
    """Step 5: one Tune trial per pending cell, with the live progress line; returns the failed cells' ids."""
    from ray import tune  # optional heavy dependency: the sweep's

    spec, failed = run.spec, []
    t_trials = time.perf_counter()
    if pending:
        ctx = SweepContext(
            tracking_uri=spec.tracking.uri, experiment_id=run.experiment_id, parent_id=run.parent_id,
            sweep_id=run.sweep_id, cells=trial_cells(run.cells), pool=pool, board=board,
            B=spec.scoring.B, n_boot=spec.scoring.n_boot, score_seed=spec.scoring.seed,
            clean_wait_s=spec.resources.clean_wait_s, run_tags=run.run_tags, threads=plan["trial_threads"],
        )  # fmt: skip
        trainable = tune.with_resources(tune.with_parameters(run_cell_trial, ctx=ctx),
                                        {"cpu": plan["trial_cpus"]})  # fmt: skip
        tuner = tune.Tuner(
            trainable, param_space={"cell_id": tune.grid_search([c.cell_id for c in trial_order(pending)])},
            tune_config=tune.TuneConfig(max_concurrent_trials=plan["max_concurrent"], reuse_actors=True),
            run_config=tune.RunConfig(
                name=f"railsweep-{run.sweep_id}-{int(time.time())}",
                failure_config=tune.FailureConfig(max_failures=spec.resources.max_failures), verbose=0),
        )  # fmt: skip
        # Tune's newer console output prints an experiment box and a TensorBoard hint whatever `verbose` says
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
        # Tune would catch Ctrl-C and return as if the wave were done: let it stop the sweep instead
        os.environ.setdefault("TUNE_DISABLE_SIGINT_HANDLER", "1")
        n_questions = sweep_questions(spec).n
        expected = sum(cell_samples(c, n_questions) for c in pending)
        with ProgressPrinter(board, interval=progress_interval, out=run.out, expected_samples=expected):
            results = tuner.fit()
        if results.num_terminated + results.num_errors < len(results):  # Tune stopped early (its SIGUSR1)
            raise KeyboardInterrupt("Ray Tune stopped before every cell's trial ended")
        for res in results:
            if res.error is not None:
                cid = res.config.get("cell_id") if res.config else None
                failed.append(cid)
                run.say(f"[sweep] cell {cid} FAILED: {type(res.error).__name__}: {res.error}"[:2000])
    add_time(run, "trials_s", time.perf_counter() - t_trials)  # waves add up
    return failed
