"""``railsweep demo``: the README's main command.

Starts (or reuses) a local Ray head and a local MLflow server on 127.0.0.1, submits the mini sweep (the CPU
miniature world: 3 families × 2 domains, clean references and every strategy) as a Ray job, streams its
progress, prints Table 3 (SA-PPG with CIs) and the MLflow UI address. --preset smoke runs a seconds-scale
version. The Ray head uses token authentication (Ray's token file, ~/.ray/auth_token) and listens on 127.0.0.1
only; it is left running for the next command.
"""

from __future__ import annotations

import argparse
from typing import Any

from railsweep.commands.sweep import add_arguments, experiment_address, submit
from railsweep.services.mlflow_server import started_server
from railsweep.services.tokens import ray_token_path
from railsweep.sweep.plan.pricing import dry_run

GROUP = "run a sweep"
EXAMPLES = ('railsweep demo                                  # the mini sweep: local Ray + MLflow, Table 3',
            'railsweep demo --preset smoke                   # a one-minute version',
            'railsweep demo --preset mini --table all        # Tables 1-4')  # fmt: skip


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser("demo", help="local Ray + MLflow, the mini sweep as a Ray job, Table 3",
                              description=__doc__.split("\n\n")[1])  # fmt: skip
    add_arguments(p, preset_default=None)  # mini unless --preset or --spec (not both)
    return p


def run(args: argparse.Namespace) -> int:
    if not args.spec and not args.preset:
        args.preset = "mini"
    if args.dry_run:
        return dry_run(args, args.table)
    rc, uri = submit(args)
    where = experiment_address(uri, args)

    # The dashboard asks for Ray's token; name the file, never its content.
    print(f"\nMLflow UI: {where}  (Ray dashboard: http://127.0.0.1:{args.dashboard_port}, "
          f"token in {ray_token_path()}; {stop_services(args.run_dir, args.tracking_uri)})", flush=True)  # fmt: skip
    return rc


def stop_services(run_dir: str, tracking_uri: str | None) -> str:
    """How to end the services the demo leaves running for browsing: the Ray head, and the MLflow server where
    one was started over ``run_dir`` and still runs (its process group id in the pid file there)."""
    pid_file = None if tracking_uri else started_server(run_dir)
    if pid_file is None:
        return "`ray stop` ends the Ray head"
    return f"`ray stop` ends the Ray head, `kill -- -$(cat {pid_file})` the MLflow server"
