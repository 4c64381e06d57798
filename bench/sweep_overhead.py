"""Sweep overhead: a whole sweep's samples/s against one engine's best on the same cells, in one run.

    python bench/sweep_overhead.py [--preset mini|smoke] [--table all] [--limit N] [--num-cpus 2]

Steps:
  1. resolve the preset (building or reusing the miniature world) and expand its cells;
  2. the reference, in this process before Ray starts: one engine per family, loaded one
     after the other, ``--reference-batch`` rows a batch (320) and ``--reference-threads``
     torch threads (1: with other jobs on the machine, two spin-waiting OpenMP threads on
     2 cores collapse 10-30x, and one thread beat two sleeping ones), evaluates every cell
     of the sweep with ``evaluate_cell`` (engine loading not timed);
  3. the sweep: a private MLflow server (free port, temporary directory) and a fresh local
     Ray instance run the same cells through :func:`railsweep.sweep.run.driver.run_sweep`, as
     ``sweeps/tables.py`` does;
  4. print JSON.

Headline: ``ratio_sweep_vs_single_engine`` = the sweep's samples/s over its whole wall time
(validation, engine loading, trials, aggregation) / the reference's samples/s (target >= 0.8).
Also: ``ratio_trials_vs_single_engine`` (the trials phase only), ``wall_s``, ``trials_s``,
``engine_busy_s_sum``/``_max`` (time engines spent evaluating cells), ``ratio_wall_vs_busy_sum``
and ``ratio_trials_vs_busy_max`` (1.0: the busiest engine never waited), and the load average
(``os.getloadavg``) before and after each phase: on a shared machine other jobs slow either side.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def single_engine(spec, cells, *, batch: int, threads: int) -> dict:
    """Every cell evaluated by one engine per family in this process; samples/s over evaluation time."""
    import torch

    from railsweep.engines.config import EngineConfig
    from railsweep.engines.factory import build_engine
    from railsweep.evaluate import evaluate_cell

    torch.set_num_threads(threads)
    samples, busy = 0, 0.0
    load_before = _load()
    for fam in spec.families:
        mine = [c for c in cells if c.family == fam.name]
        if not mine:
            continue
        engine = build_engine(EngineConfig(
            backend="transformers", model=fam.base, adapters=fam.adapters, device="cpu",
            dtype=spec.engine.dtype, max_batch_size=batch,
        ))  # fmt: skip
        for cell in mine:
            with tempfile.TemporaryDirectory(prefix="rsw-ref-") as tmp:
                res = evaluate_cell(cell.config, engine, out_dir=tmp, batch_size=spec.readout.batch_size)
            samples += res.n_samples
            busy += res.wall_s
        engine.close()
    return {
        "samples": samples,
        "eval_s": round(busy, 2),
        "samples_per_s": round(samples / max(busy, 1e-9), 2),
        "rows_per_batch": batch,
        "threads": threads,
        "load_before": load_before,
        "load_after": _load(),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini", choices=["mini", "mini_full", "mini_six", "smoke", "paper"])
    p.add_argument("--table", default="all")
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--num-cpus", type=int, default=os.cpu_count())
    p.add_argument("--limit", type=int, default=None, help="override: first N questions")
    p.add_argument("--m", type=int, default=None, help="override: samples per question")
    p.add_argument("--max-new-tokens", type=int, default=None, help="override: tokens per response")
    p.add_argument("--reference-batch", type=int, default=320, help="rows per batch of the single engine")
    p.add_argument("--reference-threads", type=int, default=1, help="its torch threads")
    p.add_argument("--no-reference", action="store_true", help="only the sweep")
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")

    from railsweep.sweep.plan.cells import expand
    from railsweep.sweep.spec.resolve import resolve_spec
    from railsweep.sweep.spec.sweep_spec import load_spec

    spec = load_spec(args.preset)
    spec = dataclasses.replace(
        spec,
        cache_dir=args.cache_dir or spec.cache_dir,
        readout=dataclasses.replace(
            spec.readout,
            limit=args.limit or spec.readout.limit,
            m=args.m or spec.readout.m,
            max_new_tokens=args.max_new_tokens or spec.readout.max_new_tokens,
        ),
    )
    resolved = resolve_spec(spec)
    reference = None
    if not args.no_reference:
        reference = single_engine(
            resolved,
            expand(resolved, args.table),
            batch=args.reference_batch,
            threads=args.reference_threads,
        )
        print(f"[bench] single engine: {json.dumps(reference)}", file=sys.stderr, flush=True)

    import ray

    from railsweep.services.mlflow_server import ensure_mlflow_server
    from railsweep.services.process import free_port
    from railsweep.sweep.run.driver import run_sweep

    load_before = _load()
    with tempfile.TemporaryDirectory(prefix="rsw-bench-") as tmp:
        svc = ensure_mlflow_server(tmp, port=free_port(), timeout=600)
        try:
            spec = dataclasses.replace(
                spec,
                tracking=dataclasses.replace(
                    spec.tracking, uri=svc.url, experiment=f"bench-{int(time.time())}"
                ),
            )
            ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
            out = run_sweep(spec, table=args.table, progress_interval=30, out=sys.stderr)
            ray.shutdown()
        finally:
            svc.stop()
    busy = [s.get("busy_s", 0.0) for s in out.engine_stats.values()]
    samples = sum(s.get("samples", 0) for s in out.engine_stats.values())
    t = out.timings
    sweep_rate = samples / max(out.wall_s, 1e-9)
    trials_rate = samples / max(t.get("trials_s", 0.0), 1e-9)
    result = {
        "preset": args.preset,
        "table": args.table,
        "cells": len(out.cells),
        "failed": len(out.failed),
        "engines": len(busy),
        "num_cpus": args.num_cpus,
        "m": spec.readout.m,
        "limit": spec.readout.limit,
        "max_new_tokens": spec.readout.max_new_tokens,
        "wall_s": round(out.wall_s, 2),
        **{k: round(v, 2) for k, v in t.items()},
        "engine_busy_s_sum": round(sum(busy), 2),
        "engine_busy_s_max": round(max(busy, default=0.0), 2),
        "engine_load_s": [round(s.get("load_s", 0.0), 2) for s in out.engine_stats.values()],
        "samples": samples,
        "samples_per_s": round(sweep_rate, 2),
        "samples_per_s_trials": round(trials_rate, 2),
        "ratio_wall_vs_busy_sum": round(out.wall_s / max(sum(busy), 1e-9), 3),
        "ratio_trials_vs_busy_max": round(t.get("trials_s", 0.0) / max(max(busy, default=0.0), 1e-9), 3),
        "sweep_load_before": load_before,
        "sweep_load_after": _load(),
    }
    if reference is not None:
        result.update(
            single_engine=reference,
            ratio_sweep_vs_single_engine=round(sweep_rate / max(reference["samples_per_s"], 1e-9), 3),
            ratio_trials_vs_single_engine=round(trials_rate / max(reference["samples_per_s"], 1e-9), 3),
            target_ratio=0.8,
        )
    print(json.dumps(result, indent=1))
    return 0 if not out.failed else 1


if __name__ == "__main__":
    sys.exit(main())
