"""The options that choose a sweep spec and override it, shared by the sweep job and ``railsweep sweep``
(which forwards them with :func:`forward_argv`). No torch here: ``railsweep sweep --help`` imports it.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from railsweep import argtypes as at
from railsweep.errors import ConfigError
from railsweep.sweep.spec.members import load_specs
from railsweep.sweep.spec.sweep_spec import PRESETS, TABLES, SweepSpec

# Options of add_spec_arguments that forward_argv passes on (dest names); the caller forwards --spec,
# --throughput and --tracking-uri (it knows where the job finds them); --dry-run never reaches a job.
_FORWARDED = ("table", "preset", "experiment", "resume", "cache_dir", "limit", "m", "cluster_sizes")
# what a stopped sweep says (the job on an error or Ctrl-C, ``railsweep sweep`` on Ctrl-C)
RESUME = ("every cell FINISHED in MLflow is kept: run the same command again with --resume to finish the sweep "
          "without recomputing them")  # fmt: skip


def add_spec_arguments(
    p: argparse.ArgumentParser, *, table: str | None = None, preset_default: str | None = None,
    preset_help: str = "built-in sweep spec (default: paper with GPUs, else mini)",
) -> None:  # fmt: skip
    """Add the spec options to ``p``; ``table`` fixes the paper table instead of offering ``--table``."""
    if table is None:
        p.add_argument("--table", default="3", choices=TABLES, help="which paper table to print (default 3)")
    p.add_argument("--preset", default=preset_default, choices=PRESETS, help=preset_help)
    p.add_argument("--spec", help="a sweep spec YAML instead of a preset")
    p.add_argument("--experiment", type=at.text, help="MLflow experiment name (default: the spec's)")
    p.add_argument("--resume", action="store_true",
                   help="reuse the unfinished parent run of this sweep; finished cells are never recomputed")
    p.add_argument("--cache-dir", type=at.writable_dir,
                   help="miniature-world cache (default $RAILSWEEP_CACHE or ~/.cache/railsweep)")
    p.add_argument("--limit", type=at.limit, help="override: first N questions")
    p.add_argument("--m", type=at.samples, help="override: samples per question")
    p.add_argument("--dry-run", action="store_true",
                   help="print the sweep's cells, samples, tokens per engine and wall time per cluster size; "
                   "start nothing")  # fmt: skip
    p.add_argument("--pilot", type=at.existing_dir,
                   help="with --dry-run: cells of an earlier run for the power planner (default: a reference "
                   "M_cl)")  # fmt: skip
    p.add_argument("--throughput", type=at.existing_file,
                   help="tokens/s table written by bench/throughput.py on the target hardware (default: the "
                   "shipped CPU one)")  # fmt: skip
    p.add_argument("--cluster-sizes", type=at.text, help="comma-separated CPU cores or GPUs to price "
                   "(default 2,4,8,16 cores; 1-8 GPUs per family)")


def check_preset_or_spec(args: argparse.Namespace) -> None:
    """A preset and a spec file both choose the whole spec: refuse the pair rather than let one win."""
    if getattr(args, "spec", None) and getattr(args, "preset", None):
        raise ConfigError(f"give --preset or --spec, not both (got --preset {args.preset} and --spec "
                          f"{args.spec})")


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


def chosen_specs(args: argparse.Namespace) -> list[SweepSpec]:
    """The spec ``--preset``/``--spec`` name, with the command line's overrides ([] when neither is given); one
    per member task when its ``readout.task`` is a harness group or tag (:mod:`railsweep.sweep.spec.members`)."""
    check_preset_or_spec(args)
    source = args.spec or args.preset
    return [override(spec, args) for spec in load_specs(source)] if source else []


def override(spec: SweepSpec, args: argparse.Namespace) -> SweepSpec:
    """``spec`` with the command line's tracking URI, experiment, limit, m and cache directory."""
    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    tracking = dataclasses.replace(spec.tracking, **({"uri": uri} if uri else {}),
                                   **({"experiment": args.experiment} if args.experiment else {}))  # fmt: skip
    readout = dataclasses.replace(spec.readout, **({"limit": args.limit} if args.limit is not None else {}),
                                  **({"m": args.m} if args.m is not None else {}))  # fmt: skip
    cache = args.cache_dir or spec.cache_dir or os.environ.get("RAILSWEEP_CACHE")
    return dataclasses.replace(spec, tracking=tracking, readout=readout, cache_dir=cache)


def check_cluster_sizes(text: str | None) -> list[int] | None:
    """``--cluster-sizes 2,4,8`` → [2, 4, 8]; anything but positive integers is a ConfigError naming it."""
    if text is None:
        return None
    sizes = []
    for part in text.split(","):
        try:
            n = int(part.strip())
        except ValueError:
            raise ConfigError(f"--cluster-sizes {text!r}: {part.strip()!r} is not an integer") from None
        if n < 1:
            raise ConfigError(f"--cluster-sizes {text!r}: a cluster size must be >= 1, got {n}")
        sizes.append(n)
    return sizes
