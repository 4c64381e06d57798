"""The sweep's Ray job: run a sweep spec on Ray Tune, stream every cell to MLflow, print a paper table.

    python -m railsweep.sweep.job --table 3 --preset smoke   # what `railsweep sweep` submits
    python sweeps/tables.py --table 3 --preset smoke         # the same job from a checkout
    ray job submit --working-dir . -- python sweeps/table3.py --preset paper

This module is the job's one entry point, installed with the package so that
``railsweep sweep`` works from a wheel: :func:`add_spec_arguments` is the one
list of the options that choose and override the spec (the ``railsweep sweep``
command adds the same ones and forwards them with :func:`forward_argv`),
:func:`make_parser` adds the job's own (which Ray to join), and :func:`main`
runs it. It is also the one place in the library that calls ``ray.init``: a job
must start or join Ray itself. The preset defaults to ``paper`` when the
cluster has GPUs and ``mini`` (the CPU miniature world) otherwise. Exit codes:
0 all cells finished, 1 some cell failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from railsweep import argtypes as at
from railsweep.errors import ConfigError, RailsweepError
from railsweep.sweep.faults import fault_from_env
from railsweep.sweep.pricing import SweepPrice, check_cluster_sizes, format_price, price_params, price_sweep
from railsweep.sweep.spec import PRESETS, TABLES, SweepSpec, load_spec
from railsweep.sweep.throughput import load_throughput

# Options of add_spec_arguments that forward_argv passes on (dest names); --spec, --throughput and
# --tracking-uri are forwarded by the caller, which knows where the job will find them; --dry-run never
# reaches a job.
_FORWARDED = ("table", "preset", "experiment", "resume", "cache_dir", "limit", "m", "cluster_sizes")


def add_spec_arguments(
    p: argparse.ArgumentParser, *, table: str | None = None, preset_default: str | None = None,
    preset_help: str = "built-in sweep spec (default: paper with GPUs, else mini)",
) -> None:  # fmt: skip
    """The options that choose the spec and override it, shared by this job and ``railsweep sweep``.

    ``table`` fixes the paper table (``sweeps/table1.py`` …) instead of offering ``--table``.
    """
    if table is None:
        p.add_argument("--table", default="3", choices=TABLES, help="which paper table to print (default 3)")
    p.add_argument("--preset", default=preset_default, choices=PRESETS, help=preset_help)
    p.add_argument("--spec", help="a sweep spec YAML instead of a preset")
    p.add_argument("--experiment", type=at.text, help="MLflow experiment name (default: the spec's)")
    p.add_argument(
        "--resume",
        action="store_true",
        help="reuse the unfinished parent run of this sweep; finished cells are never recomputed",
    )
    p.add_argument(
        "--cache-dir",
        type=at.writable_dir,
        help="miniature-world cache (default $RAILSWEEP_CACHE or ~/.cache/railsweep)",
    )
    p.add_argument("--limit", type=at.limit, help="override: first N questions")
    p.add_argument("--m", type=at.samples, help="override: samples per question")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the sweep's cells, samples, tokens per engine and wall time per cluster size; start nothing",
    )
    p.add_argument(
        "--throughput",
        type=at.existing_file,
        help="tokens/s table written by bench/throughput.py on the target hardware (default: the shipped CPU one)",
    )
    p.add_argument(
        "--cluster-sizes",
        type=at.text,
        help="comma-separated CPU cores or GPUs to price (default 2,4,8,16 cores; 1-8 GPUs per family)",
    )


def check_preset_or_spec(args: argparse.Namespace) -> None:
    """A preset and a spec file both choose the whole spec: refuse the pair rather than let one win."""
    if getattr(args, "spec", None) and getattr(args, "preset", None):
        raise ConfigError(
            f"give --preset or --spec, not both (got --preset {args.preset} and --spec {args.spec})"
        )


def forward_argv(args: argparse.Namespace) -> list[str]:
    """The job's command-line options for the shared options set in ``args`` (not --spec, --tracking-uri)."""
    out: list[str] = []
    for dest in _FORWARDED:
        value = getattr(args, dest, None)
        flag = "--" + dest.replace("_", "-")
        if value is True:
            out.append(flag)
        elif value is not None and value is not False:
            out += [flag, str(value)]
    return out


def make_parser(table: str | None = None) -> argparse.ArgumentParser:
    p = at.Parser(description=__doc__.split("\n\n")[0])
    add_spec_arguments(p, table=table)
    p.add_argument(
        "--tracking-uri",
        type=at.text,
        help="MLflow HTTP server (default: $MLFLOW_TRACKING_URI, else the spec's)",
    )
    p.add_argument(
        "--ray-address",
        type=at.text,
        help="Ray cluster to join (default: $RAY_ADDRESS, set inside a Ray job, else a fresh private instance)",
    )
    p.add_argument(
        "--num-cpus",
        type=at.positive,
        help="CPUs of a fresh private Ray instance (ignored when joining a cluster)",
    )
    p.add_argument(
        "--progress-interval", type=at.positive_real, default=10.0, help="seconds between progress lines"
    )
    return p


def chosen_spec(args: argparse.Namespace) -> SweepSpec | None:
    """The spec ``--preset``/``--spec`` name, with the command line's overrides; None when neither is given."""
    check_preset_or_spec(args)
    spec = load_spec(args.spec) if args.spec else (load_spec(args.preset) if args.preset else None)
    return None if spec is None else _override(spec, args)


def sweep_price(spec: SweepSpec, table: str, args: argparse.Namespace) -> SweepPrice:
    """The price of ``spec`` for ``table`` with the command line's throughput table and cluster sizes."""
    return price_sweep(spec, table, load_throughput(args.throughput), check_cluster_sizes(args.cluster_sizes))


def dry_run(args: argparse.Namespace, table: str) -> int:
    """``--dry-run``: print what the sweep would cost; nothing is started, built, loaded or written."""
    spec = chosen_spec(args)
    if spec is None:
        raise ConfigError("--dry-run needs --preset or --spec (without them the sweep picks its preset by the GPUs "
                          "of the cluster it joins)")  # fmt: skip
    print(format_price(sweep_price(spec, table, args)), flush=True)
    return 0


def main(argv: list[str] | None = None, table: str | None = None) -> int:
    try:
        args = make_parser(table).parse_args(argv)
        table = table or args.table
        from railsweep.sweep.local import ray_init_kwargs
        from railsweep.sweep.tracking import check_tracking_uri

        if args.dry_run:
            return dry_run(args, table)
        fault = fault_from_env()  # the fault-injection tests' hook; None outside them
        # Validate the spec, its inputs and the pricing options before Ray starts: a bad spec costs one line, not a
        # cluster.
        spec = chosen_spec(args)
        price = sweep_price(spec, table, args) if spec is not None else None
        if spec is not None:
            spec.check_inputs()  # families, model/adapter/data paths: before Ray starts
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
            price = sweep_price(spec, table, args)
        print(format_price(price), flush=True)
        outcome = run_sweep(spec, table=table, resume=args.resume, progress_interval=args.progress_interval,
                            params=price_params(price), fault=fault)  # fmt: skip
    except RailsweepError as e:
        message = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
        print(f"railsweep: error: {message}", file=sys.stderr)
        return 2
    print(f"[sweep] done in {outcome.wall_s:.1f}s: {len(outcome.cells)} cells, {len(outcome.skipped)} skipped, "
          f"{len(outcome.failed)} failed; parent run {outcome.parent_run_id}")  # fmt: skip
    return 1 if outcome.failed else 0


def _override(spec, args):
    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    tracking = dataclasses.replace(spec.tracking, **({"uri": uri} if uri else {}),
                                   **({"experiment": args.experiment} if args.experiment else {}))  # fmt: skip
    readout = dataclasses.replace(spec.readout, **({"limit": args.limit} if args.limit is not None else {}),
                                  **({"m": args.m} if args.m is not None else {}))  # fmt: skip
    cache = args.cache_dir or spec.cache_dir or os.environ.get("RAILSWEEP_CACHE")
    return dataclasses.replace(spec, tracking=tracking, readout=readout, cache_dir=cache)


if __name__ == "__main__":
    sys.exit(main())
