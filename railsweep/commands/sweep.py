"""``railsweep sweep``: submit a sweep (``sweeps/tables.py``) as a Ray job and stream its logs.

Without ``--address`` it starts (or reuses) a local Ray head and a local MLflow
server on 127.0.0.1 first (:mod:`railsweep.sweep.local`); with ``--address``
it submits to that cluster's dashboard and needs ``--tracking-uri`` (an HTTP
MLflow server every node can reach). ``railsweep demo`` is this command with
the ``mini`` preset and local services.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from railsweep.errors import ConfigError
from railsweep.sweep.spec import PRESETS

REPO_ROOT = Path(__file__).resolve().parents[2]


def add_arguments(p: argparse.ArgumentParser, *, preset_default: str | None) -> None:
    p.add_argument(
        "--preset",
        default=preset_default,
        choices=PRESETS,
        help="built-in sweep spec",
    )
    p.add_argument("--spec", help="a sweep spec YAML (inside the working directory) instead of a preset")
    p.add_argument(
        "--table", default="3", choices=["1", "2", "3", "4", "all"], help="paper table to print (default 3)"
    )
    p.add_argument(
        "--resume", action="store_true", help="resume the unfinished parent run; finished cells are skipped"
    )
    p.add_argument("--address", help="Ray dashboard address of an existing cluster (default: a local head)")
    p.add_argument(
        "--tracking-uri", help="MLflow HTTP server (default: a local one on 127.0.0.1:--mlflow-port)"
    )
    p.add_argument("--experiment", help="MLflow experiment name (default: the spec's)")
    p.add_argument("--run-dir", default="runs/mlflow", help="local MLflow server's database and artifacts")
    p.add_argument("--mlflow-port", type=int, default=5000)
    p.add_argument("--dashboard-port", type=int, default=8265)
    p.add_argument(
        "--cache-dir", help="miniature-world cache (default $RAILSWEEP_CACHE or ~/.cache/railsweep)"
    )
    p.add_argument("--limit", type=int, help="override: first N questions")
    p.add_argument("--no-wait", action="store_true", help="submit and return without streaming the logs")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("sweep", help="run a sweep as a Ray job (Ray Tune + MLflow) and print a table",
                              description=__doc__.split("\n\n")[0])  # fmt: skip
    add_arguments(p, preset_default=None)
    return p


def check_args(args: argparse.Namespace) -> None:
    """Validate the command line and the spec; starts nothing and writes nothing.

    Steps: numeric options; the spec (validated in full by ``load_spec``, and inside the working directory
    the job is shipped with); the cluster/tracking pair (a given tracking URI must answer now); the local
    directories the local services would write.
    """
    from railsweep.results.io import check_writable_dir
    from railsweep.sweep.spec import load_spec
    from railsweep.sweep.tracking import check_tracking_uri

    script = REPO_ROOT / "sweeps" / "tables.py"
    if not script.is_file():
        raise ConfigError(f"{script} not found: run railsweep sweep/demo from a railsweep checkout")
    if args.limit is not None and args.limit < 1:
        raise ConfigError(f"--limit must be >= 1, got {args.limit}")
    for flag, port in (("--mlflow-port", args.mlflow_port), ("--dashboard-port", args.dashboard_port)):
        if not 1 <= port <= 65535:
            raise ConfigError(f"{flag} must be a TCP port in 1..65535, got {port}")
    if args.spec:
        load_spec(args.spec)  # fail here, not in the job
        rel = os.path.relpath(Path(args.spec).resolve(), REPO_ROOT)
        if rel.startswith(".."):
            raise ConfigError(
                f"--spec {args.spec} is outside the working directory {REPO_ROOT}, which is what the job "
                "receives; copy the spec into it"
            )
    if args.address and not args.tracking_uri:
        raise ConfigError("--address needs --tracking-uri (an MLflow HTTP server every node can reach)")
    if args.tracking_uri:
        check_tracking_uri(args.tracking_uri)
    if not args.address:  # the local services write on this machine
        if not args.tracking_uri:
            check_writable_dir(args.run_dir, "--run-dir")
        if args.cache_dir:
            check_writable_dir(args.cache_dir, "--cache-dir")


def submit(args: argparse.Namespace) -> tuple[int, str]:
    """Start/reuse services as needed, submit the job; returns (exit code, tracking URI)."""
    from railsweep.sweep.local import ensure_mlflow_server, ensure_ray_head, submit_job
    from railsweep.sweep.tracking import check_tracking_uri

    check_args(args)  # every input, before any service starts
    if args.address:
        address, uri = args.address, args.tracking_uri
    else:
        uri = args.tracking_uri or ensure_mlflow_server(args.run_dir, port=args.mlflow_port).url
        address = ensure_ray_head(dashboard_port=args.dashboard_port).dashboard
    if not args.tracking_uri:
        check_tracking_uri(uri)  # the local server (a given URI was checked above)
    # A local head runs the job on this machine: use this interpreter (its venv has ray), not whatever
    # `python` is first on PATH. A remote cluster has its own environment.
    python = "python" if args.address else sys.executable
    entry = [python, "sweeps/tables.py", "--table", args.table, "--tracking-uri", uri]
    if args.spec:
        entry += ["--spec", os.path.relpath(Path(args.spec).resolve(), REPO_ROOT)]
    elif args.preset:
        entry += ["--preset", args.preset]
    for flag, value in (
        ("--experiment", args.experiment),
        ("--limit", args.limit),
        ("--cache-dir", args.cache_dir),
    ):
        if value is not None:
            entry += [flag, str(value)]
    if args.resume:
        entry.append("--resume")
    env = {"MLFLOW_TRACKING_URI": uri, "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
           "RAY_ACCEL_ENV_VAR_OVERRIDE_ON_ZERO": "1"}  # fmt: skip
    cache = args.cache_dir or os.environ.get("RAILSWEEP_CACHE")
    if cache:
        env["RAILSWEEP_CACHE"] = str(Path(cache).expanduser().resolve())
    print(f"[railsweep] submitting `{' '.join(entry)}` to {address}", flush=True)
    rc = submit_job(address, entry, working_dir=REPO_ROOT, env_vars=env, no_wait=args.no_wait)
    return rc, uri


def run(args: argparse.Namespace) -> int:
    rc, uri = submit(args)
    print(f"[railsweep] MLflow UI: {uri}", flush=True)
    return rc
