"""``railsweep score``: compare mitigated cells against their clean reference cell (docs/metrics.md); every input
is read and checked before anything is written (:mod:`railsweep.commands.score_cells`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from railsweep import argtypes as at
from railsweep.errors import ConfigError

GROUP = "evaluate one cell"
EXAMPLES = (
    'railsweep score --clean cells/CLEAN.parquet --mitigated cells/ID1.parquet cells/ID2.parquet --out scores/table',
    'railsweep score --clean cells/CLEAN.parquet --mitigated cells/*.parquet --B 20 --n-boot 2000 --out scores/b20',
)


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "score",
        help="score mitigated cells against the clean reference cell (metrics with CIs)",
        description="Per-question metrics (G-AP, A-PPG, SA-PPG, ...) with checked 95 % intervals (bootstrap over "
        "questions for the means, jackknife for the stratified metrics), each metric's noise floor and, with an "
        "Identity cell, paired differences with verdicts (docs/metrics.md).",
    )
    p.add_argument("--clean", required=True, metavar="FILE",
                   help="the clean reference cell's per-question Parquet")  # fmt: skip
    p.add_argument("--mitigated", required=True, nargs="+", metavar="FILE", help="one or more cells to score")
    p.add_argument("--B", type=at.strata, default=50, dest="B", help="number of strata for SA-PPG (paper 50)")
    p.add_argument("--n-boot", type=at.n_boot, default=1000, help="bootstrap resamples")
    p.add_argument("--alpha", type=at.probability, default=0.05, help="CI level is 1 - alpha")
    p.add_argument("--seed", type=at.seed, default=0, help="bootstrap seed")
    p.add_argument("--out", required=True, metavar="PREFIX", help="writes PREFIX.csv and PREFIX.md")
    return p


def check_args(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if out.name in ("", ".", "..") or out.is_dir():
        raise ConfigError(f"--out is a file prefix (writes PREFIX.csv and PREFIX.md), got a directory: {args.out}")
    at.check_writable_dir(out.parent, "--out", shown=args.out)  # before reading or scoring anything
    for path in (out.with_name(out.name + ".csv"), out.with_name(out.name + ".md")):
        if path.is_dir():
            raise ConfigError(f"--out {args.out}: {path} is a directory, so it cannot be written")


def run(args: argparse.Namespace) -> int:
    check_args(args)
    # pandas, pyarrow: loaded when the command runs, so `railsweep --help` and refusals of bad options stay fast
    from railsweep.commands.score_cells import score_cells

    return score_cells(args)
