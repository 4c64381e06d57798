"""The sweep's Ray job: run a sweep spec on Ray Tune, stream every cell to MLflow, print a paper table.

    python -m railsweep.sweep.job --table 3 --preset smoke   # what `railsweep sweep` submits
    python sweeps/tables.py --table 3 --preset smoke         # the same job from a checkout
    ray job submit --working-dir . -- python sweeps/table3.py --preset paper

Installed with the package so that ``railsweep sweep`` works from a wheel. :func:`main` validates everything,
then starts or joins Ray and runs the sweep; the preset defaults to ``paper`` when the cluster has GPUs, else
``mini``. Exit codes: 0 all cells finished, 1 some cell failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import sys
from typing import TYPE_CHECKING

from railsweep import argtypes as at
from railsweep.errors import RailsweepError, one_line
from railsweep.services.ray_init import ray_init_kwargs
from railsweep.sweep.plan.pricing import dry_run, format_price, price_params, sweep_price
from railsweep.sweep.run.faults import fault_from_env
from railsweep.sweep.spec.options import RESUME, add_spec_arguments, chosen_specs, override
from railsweep.sweep.spec.sweep_spec import load_spec
from railsweep.sweep.tracking import tracker

if TYPE_CHECKING:
    from railsweep.sweep.run.driver import SweepOutcome


def make_parser(table: str | None = None) -> argparse.ArgumentParser:
    p = at.Parser(description=__doc__.split("\n\n")[0])
    add_spec_arguments(p, table=table)
    p.add_argument("--tracking-uri", type=at.text,
                   help="MLflow HTTP server (default: $MLFLOW_TRACKING_URI, else the spec's)")
    p.add_argument("--ray-address", type=at.text,
                   help="Ray cluster to join (default: $RAY_ADDRESS, set inside a Ray job, else a fresh "
                   "private instance)")  # fmt: skip
    p.add_argument("--num-cpus", type=at.positive,
                   help="CPUs of a fresh private Ray instance (ignored when joining a cluster)")
    p.add_argument("--progress-interval", type=at.positive_real, default=10.0,
                   help="seconds between progress lines")  # fmt: skip
    return p


def _run(args: argparse.Namespace, table: str) -> list[SweepOutcome]:
    """Validate the spec, its inputs and the pricing options before Ray starts (a bad spec costs one line, not
    a cluster); then start or join Ray and run the sweep (one per member task of a harness group). Calls go
    through the modules, so a test that replaces ``run_sweep`` or ``check_tracking_uri`` there does here."""
    from railsweep.sweep.run import driver  # torch, transformers, Ray Tune: loaded after the arguments

    fault = fault_from_env()  # the fault-injection tests' hook; None outside them
    specs = chosen_specs(args)
    prices = [sweep_price(spec, table, args) for spec in specs]
    for spec in specs:
        spec.check_inputs()  # families, model/adapter/data paths: before Ray starts
        tracker.check_tracking_uri(spec.tracking.uri)  # before Ray starts, too
    # Token authentication either way; a private instance binds 127.0.0.1 only (set before Ray loads).
    init = ray_init_kwargs(args.ray_address, num_cpus=args.num_cpus)
    plain_worker_lines(sys.stdout)
    import ray  # optional heavy dependency, imported after the token-auth environment is set

    ray.init(**init, log_to_driver=True)
    if not specs:
        specs = [override(load_spec("paper" if ray.cluster_resources().get("GPU", 0) >= 1 else "mini"), args)]
        prices = [sweep_price(specs[0], table, args)]
    outcomes = []
    for k, (spec, price) in enumerate(zip(specs, prices, strict=True)):
        if len(specs) > 1:
            print(f"[sweep] {spec.task_group}: member {k + 1} of {len(specs)}, {spec.readout.task} ({spec.name})",
                  flush=True)  # fmt: skip
        print(format_price(price, dry_run=False), flush=True)
        outcomes.append(driver.run_sweep(spec, table=table, resume=args.resume,
                                         progress_interval=args.progress_interval, params=price_params(price),
                                         fault=fault))  # fmt: skip
    return outcomes


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class _NoAnsi(logging.Filter):
    """Strips ANSI colour codes from a log record (Ray colours the dashboard address it logs on connecting)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = _ANSI.sub("", record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(_ANSI.sub("", a) if isinstance(a, str) else a for a in record.args)
        return True


def plain_worker_lines(stream) -> None:
    """Where the job's output is not a terminal (a job log, a pipe), Ray prints its workers' lines without ANSI
    colour codes (``RAY_COLOR_PREFIX=0``, read as each line is printed; a value the user set is kept), and the
    line ``ray.init`` logs on connecting loses its colours too."""
    if not stream.isatty():
        os.environ.setdefault("RAY_COLOR_PREFIX", "0")
        logging.getLogger("ray._private.worker").addFilter(_NoAnsi())


def main(argv: list[str] | None = None, table: str | None = None) -> int:
    # Ctrl-C and `ray job stop` (SIGINT) stop the sweep even where a Ray head started from a background shell
    # handed its jobs SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        args = make_parser(table).parse_args(argv)
        table = table or args.table
        outcome = dry_run(args, table) if args.dry_run else _run(args, table)
    except tracker.TrackingError as e:  # MLflow went away mid-sweep: what is logged stays logged
        print(f"railsweep: error: {one_line(e)}; {RESUME}", file=sys.stderr)
        return 1
    except RailsweepError as e:
        print(f"railsweep: error: {one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"[sweep] interrupted: the parent run and its unfinished cells are KILLED; {RESUME}", file=sys.stderr)
        return 130
    if isinstance(outcome, int):  # --dry-run
        return outcome
    failed = []
    for one in outcome:
        print(f"[sweep] done in {one.wall_s:.1f}s: {len(one.cells)} cells, {len(one.skipped)} skipped, "
              f"{len(one.failed)} failed; parent run {one.parent_run_id}")  # fmt: skip
        failed += one.failed
    if failed:
        shown = ", ".join(failed[:5]) + (", ..." if len(failed) > 5 else "")
        print(f"[sweep] {len(failed)} cell(s) failed ({shown}; their runs carry the error); {RESUME}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
