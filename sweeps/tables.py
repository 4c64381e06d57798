"""Run a railsweep sweep on Ray Tune, stream every cell to MLflow, and print a paper table.

    python sweeps/tables.py --table 3                       # local Ray, MLflow at $MLFLOW_TRACKING_URI
    ray job submit --working-dir . -- python sweeps/tables.py --table 3 --preset mini

``sweeps/table1.py`` … ``table4.py`` are this script with ``--table`` fixed. The preset
defaults to ``paper`` when the cluster has GPUs and ``mini`` (the CPU miniature world)
otherwise. Exit codes: 0 all cells finished, 1 some cell failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

# With `ray job submit --working-dir .` the job's cwd is the uploaded checkout; make it importable either way.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from railsweep.errors import RailsweepError  # noqa: E402
from railsweep.sweep.spec import PRESETS  # noqa: E402


def make_parser(table: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    if table is None:
        p.add_argument(
            "--table", default="3", choices=["1", "2", "3", "4", "all"], help="which paper table (default 3)"
        )
    p.add_argument(
        "--preset",
        choices=PRESETS,
        help="built-in sweep spec (default: paper with GPUs, else mini)",
    )
    p.add_argument("--spec", help="a sweep spec YAML instead of a preset")
    p.add_argument(
        "--tracking-uri", help="MLflow HTTP server (default: $MLFLOW_TRACKING_URI, else the spec's)"
    )
    p.add_argument("--experiment", help="MLflow experiment name (default: the spec's)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="reuse the unfinished parent run of this sweep; finished cells are never recomputed",
    )
    p.add_argument(
        "--cache-dir", help="miniature-world cache (default $RAILSWEEP_CACHE or ~/.cache/railsweep)"
    )
    p.add_argument("--limit", type=int, help="override: first N questions")
    p.add_argument("--m", type=int, help="override: samples per question")
    p.add_argument(
        "--ray-address",
        help="Ray cluster to join (default: $RAY_ADDRESS, set inside a Ray job, else a fresh private instance)",
    )
    p.add_argument(
        "--num-cpus", type=int, help="CPUs of a fresh private Ray instance (ignored when joining a cluster)"
    )
    p.add_argument("--progress-interval", type=float, default=10.0, help="seconds between progress lines")
    return p


def main(argv: list[str] | None = None, table: str | None = None) -> int:
    args = make_parser(table).parse_args(argv)
    table = table or args.table
    try:
        from railsweep.sweep.local import ray_init_kwargs
        from railsweep.sweep.spec import load_spec
        from railsweep.sweep.tracking import check_tracking_uri

        if args.spec and args.preset:
            raise RailsweepError("give --preset or --spec, not both")
        # Validate the spec before Ray starts: a bad spec costs one line, not a cluster.
        spec = load_spec(args.spec) if args.spec else (load_spec(args.preset) if args.preset else None)
        if spec is not None:
            spec = _override(spec, args)
            check_tracking_uri(spec.tracking.uri)  # before Ray starts, too
        # Token authentication either way; a private instance binds 127.0.0.1 only (set before Ray loads).
        init = ray_init_kwargs(args.ray_address, num_cpus=args.num_cpus)
        import ray

        from railsweep.sweep.driver import run_sweep

        ray.init(**init, log_to_driver=True)
        if spec is None:
            spec = _override(
                load_spec("paper" if ray.cluster_resources().get("GPU", 0) >= 1 else "mini"), args
            )
        outcome = run_sweep(spec, table=table, resume=args.resume, progress_interval=args.progress_interval)
    except RailsweepError as e:
        print(f"railsweep: error: {e}", file=sys.stderr)
        return 2
    print(f"[sweep] done in {outcome.wall_s:.1f}s: {len(outcome.cells)} cells, {len(outcome.skipped)} skipped, "
          f"{len(outcome.failed)} failed; parent run {outcome.parent_run_id}")  # fmt: skip
    return 1 if outcome.failed else 0


def _override(spec, args):
    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    tracking = dataclasses.replace(spec.tracking, **({"uri": uri} if uri else {}),
                                   **({"experiment": args.experiment} if args.experiment else {}))  # fmt: skip
    readout = dataclasses.replace(spec.readout, **({"limit": args.limit} if args.limit else {}),
                                  **({"m": args.m} if args.m else {}))  # fmt: skip
    cache = args.cache_dir or spec.cache_dir or os.environ.get("RAILSWEEP_CACHE")
    return dataclasses.replace(spec, tracking=tracking, readout=readout, cache_dir=cache)


if __name__ == "__main__":
    sys.exit(main())
