"""Sweep overhead: wall time of a whole sweep against the summed busy time of its engines.

    python bench/sweep_overhead.py [--preset mini|smoke] [--table all] [--cache-dir DIR] [--num-cpus 2]

Starts a private MLflow server (free port, temporary directory) and a fresh local
Ray instance, runs the sweep through :func:`railsweep.sweep.driver.run_sweep`
exactly as ``sweeps/tables.py`` does, and prints JSON:

- ``wall_s``: the whole sweep (validation, parent run, engine loading, trials, aggregation);
- ``trials_s``: only the ``Tuner.fit`` phase;
- ``engine_busy_s_sum`` / ``engine_busy_s_max``: time engines spent evaluating cells
  (summed over engines / the busiest one);
- ``ratio_wall_vs_busy_sum`` (target <= 1.15) and ``ratio_trials_vs_busy_max`` (the
  overhead on the critical path: 1.0 means the busiest engine never waited).
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", default="mini", choices=["mini", "mini_full", "smoke", "paper"])
    p.add_argument("--table", default="all")
    p.add_argument("--cache-dir", default=None)
    p.add_argument("--num-cpus", type=int, default=os.cpu_count())
    p.add_argument("--limit", type=int, default=None, help="override: first N questions")
    p.add_argument("--m", type=int, default=None, help="override: samples per question")
    p.add_argument("--max-new-tokens", type=int, default=None, help="override: tokens per response")
    args = p.parse_args(argv)
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    from railsweep.sweep.driver import run_sweep
    from railsweep.sweep.local import ensure_mlflow_server, free_port
    from railsweep.sweep.spec import load_spec

    spec = load_spec(args.preset)
    with tempfile.TemporaryDirectory(prefix="rsw-bench-") as tmp:
        svc = ensure_mlflow_server(tmp, port=free_port())
        try:
            spec = dataclasses.replace(
                spec,
                cache_dir=args.cache_dir or spec.cache_dir,
                tracking=dataclasses.replace(
                    spec.tracking, uri=svc.url, experiment=f"bench-{int(time.time())}"
                ),
                readout=dataclasses.replace(
                    spec.readout,
                    limit=args.limit or spec.readout.limit,
                    m=args.m or spec.readout.m,
                    max_new_tokens=args.max_new_tokens or spec.readout.max_new_tokens,
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
        "samples_per_s": round(samples / max(out.wall_s, 1e-9), 2),
        "ratio_wall_vs_busy_sum": round(out.wall_s / max(sum(busy), 1e-9), 3),
        "ratio_trials_vs_busy_max": round(t.get("trials_s", 0.0) / max(max(busy, default=0.0), 1e-9), 3),
        "target_ratio": 1.15,
    }
    print(json.dumps(result, indent=1))
    return 0 if not out.failed else 1


if __name__ == "__main__":
    sys.exit(main())
