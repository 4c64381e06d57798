"""railsweep sweep: submit a sweep (python -m railsweep.sweep.job) as a Ray job and stream its logs.

Without ``--address`` it starts (or reuses) a local Ray head and MLflow server on 127.0.0.1 and runs the job with
this interpreter and this railsweep; with ``--address`` it submits to that cluster (whose image has railsweep)
and needs ``--tracking-uri``, and a ``--spec`` travels in the job's working directory, the current directory.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import railsweep
from railsweep import argtypes as at
from railsweep.errors import ConfigError
from railsweep.services import jobs, mlflow_server, ray_head
from railsweep.sweep.plan.pricing import dry_run
from railsweep.sweep.plan.throughput import load_throughput
from railsweep.sweep.spec.members import load_specs
from railsweep.sweep.spec.options import (
    RESUME,
    add_spec_arguments,
    check_cluster_sizes,
    check_preset_or_spec,
    forward_argv,
)
from railsweep.sweep.tracking.mlflow_view import ui_address
from railsweep.sweep.tracking.tracker import check_tracking_uri

GROUP = "run a sweep"
EXAMPLES = (
    'railsweep sweep --preset mini_six --dry-run     # cells, tokens and wall time per cluster size; starts nothing',
    'railsweep sweep --spec my_sweep.yaml --table 3',
    'railsweep sweep --preset paper --address http://127.0.0.1:8265 --tracking-uri http://mlflow:5000',
)


def add_arguments(p: argparse.ArgumentParser, *, preset_default: str | None) -> None:
    add_spec_arguments(p, preset_default=preset_default, preset_help="built-in sweep spec")
    p.add_argument("--address", type=at.text, help="Ray dashboard address of an existing cluster (default: a local head)")
    p.add_argument("--tracking-uri", type=at.text,
                   help="MLflow HTTP server (default: a local one on 127.0.0.1:--mlflow-port)")  # fmt: skip
    p.add_argument("--run-dir", type=at.text, default="runs/mlflow", help="local MLflow server's database and artifacts")
    p.add_argument("--mlflow-port", type=at.port, default=5000, help="port of the local MLflow server (started or reused on 127.0.0.1)")
    p.add_argument("--dashboard-port", type=at.port, default=8265, help="port of the local Ray head's dashboard and job API")
    p.add_argument("--no-wait", action="store_true", help="submit and return without streaming the logs")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("sweep", help="run a sweep as a Ray job (Ray Tune + MLflow) and print a table",
                              description=__doc__.split("\n\n")[0])  # fmt: skip
    add_arguments(p, preset_default=None)
    return p


def check_args(args: argparse.Namespace) -> None:
    """Validate the command line and the spec, starting and writing nothing: a preset or a spec; the spec in full
    (for a cluster, inside the shipped working directory); the cluster/tracking pair; the local services' dirs."""
    check_preset_or_spec(args)
    specs = load_specs(args.spec or args.preset) if args.spec or args.preset else []  # fail here, not in the job
    for spec in specs:
        if not args.address:  # a cluster's paths are the cluster's; a local job's are this machine's
            spec.check_inputs()
    for flag, path in (("--spec", args.spec), ("--throughput", args.throughput)):
        if path and args.address and os.path.relpath(Path(path).resolve(), Path.cwd()).startswith(".."):
            raise ConfigError(
                f"{flag} {path} is outside the working directory {Path.cwd()}, which is what the job "
                "on the cluster receives; copy the file into it"
            )
    load_throughput(args.throughput)
    check_cluster_sizes(args.cluster_sizes)
    if args.address and not args.tracking_uri:
        raise ConfigError("--address needs --tracking-uri (an MLflow HTTP server every node can reach)")
    if args.tracking_uri:
        check_tracking_uri(args.tracking_uri)
    if not args.address:  # the local services write on this machine
        if not args.tracking_uri:
            at.check_writable_dir(args.run_dir, "--run-dir")


def submit(args: argparse.Namespace) -> tuple[int, str]:
    """Start/reuse services as needed, submit the job; returns (exit code, tracking URI)."""
    check_args(args)  # every input, before any service starts
    if args.address:
        address, uri = args.address, args.tracking_uri
    else:
        uri = args.tracking_uri or mlflow_server.ensure_mlflow_server(args.run_dir, port=args.mlflow_port).url
        address = ray_head.ensure_ray_head(dashboard_port=args.dashboard_port).dashboard
    if not args.tracking_uri:
        check_tracking_uri(uri)  # the local server (a given URI was checked above)
    env = {"MLFLOW_TRACKING_URI": uri, "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
           "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "1"}  # fmt: skip
    cache = args.cache_dir or os.environ.get("RAILSWEEP_CACHE")
    if cache:
        env["RAILSWEEP_CACHE"] = str(Path(cache).expanduser().resolve())
    forwarded = argparse.Namespace(**vars(args))
    if args.spec:
        forwarded.preset = None  # a spec replaces the preset (demo's default one included)
    if args.address:
        # A remote cluster runs its own environment; a spec travels in the uploaded working directory.
        python, working_dir = "python", (Path.cwd() if args.spec else None)
        spec = os.path.relpath(Path(args.spec).resolve(), Path.cwd()) if args.spec else None
    else:
        # A local head runs the job on this machine: this interpreter (its venv has ray), this railsweep.
        python, working_dir = sys.executable, None
        spec = str(Path(args.spec).resolve()) if args.spec else None
        if args.cache_dir:  # the job's working directory is not this one
            forwarded.cache_dir = env["RAILSWEEP_CACHE"]
        env.update(_this_railsweep_env())
    entry = [python, "-m", "railsweep.sweep.job", *forward_argv(forwarded), "--tracking-uri", uri]
    if spec:
        entry += ["--spec", spec]
    if args.throughput:  # like the spec: in the uploaded working directory, or this machine's path
        where = Path(args.throughput).resolve()
        entry += ["--throughput", os.path.relpath(where, Path.cwd()) if args.address else str(where)]
    print(f"[railsweep] submitting `{' '.join(entry)}` to {address}", flush=True)
    rc = jobs.submit_job(address, entry, working_dir=working_dir, env_vars=env, no_wait=args.no_wait)
    return rc, uri


def _this_railsweep_env() -> dict[str, str]:
    """The environment that makes a local job run this railsweep: ``PYTHONSAFEPATH=1`` (a job inherits the Ray
    head's working directory, whose ``railsweep`` checkout would shadow this one) and ``PYTHONPATH`` (this
    checkout, when railsweep is imported from one)."""
    env = {"PYTHONSAFEPATH": "1"}
    root = Path(railsweep.__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file():
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(root), os.environ.get("PYTHONPATH"))))
    return env


def run(args: argparse.Namespace) -> int:
    if args.dry_run:
        return dry_run(args, args.table)
    try:
        rc, uri = submit(args)
    except KeyboardInterrupt:
        print(f"[railsweep] {RESUME}", flush=True)
        raise
    print(f"[railsweep] MLflow UI: {experiment_address(uri, args)}", flush=True)
    return rc


def experiment_address(uri: str, args: argparse.Namespace) -> str:
    """The runs table of the sweep's experiment (:func:`railsweep.sweep.tracking.mlflow_view.ui_address`), else ``uri``."""
    try:
        from mlflow import MlflowClient  # heavy: imported once the sweep has run

        name = args.experiment or load_specs(args.spec or args.preset)[0].tracking.experiment
        exp = MlflowClient(tracking_uri=uri).get_experiment_by_name(name)
        return ui_address(uri, exp.experiment_id) if exp else uri
    except Exception:  # the address is a convenience; never fail the sweep over it
        return uri
