"""``railsweep detect``: score contamination detectors per item, and against the truth where it is known.

Items come from files (``--test``, ``--leak-split`` for the truth, ``--control`` to calibrate the thresholds) or
from a built ``--world``; ``perturb`` reads two per-question tables of one model (original wording and its
paraphrase). Writes ``OUT/detections.parquet`` and, where the truth is known, ``OUT/truth.csv``/``truth.md``;
``railsweep detect report`` sets full-set and clean-subset scores side by side. Every input is checked before
any scoring; every file is written atomically.
"""

from __future__ import annotations

import argparse
from typing import Any

from railsweep import argtypes as at
from railsweep.commands.detect_options import add_detect_options
from railsweep.errors import ConfigError

GROUP = "look inside"
# old option names, accepted with a warning until the next release (railsweep.argtypes.renamed_options)
RENAMED = {"--alpha": "--cdd-alpha", "--xi": "--cdd-xi"}
EXAMPLES = (
    'railsweep detect --world mini --detector ngram --out detect/ngram',
    'railsweep detect --world mini --detector loss --detector mink --out detect/lm',
    'railsweep detect report --help                 # clean subsets scored from a detection',
)
DETECTORS = ("ngram", "loss", "mink", "cdd", "perturb")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "detect",
        help="score contamination detectors (ngram, loss, mink, cdd, perturb) per item; 'report' clean subsets",
        description="Contamination detectors from the corpus side and the model side, per item; "
        "'railsweep detect report' puts full-set and clean-subset scores side by side.",
    )
    p.add_argument("action", nargs="?", choices=("report",),
                   help="report: full-set vs clean-subset scores of the items flagged")  # fmt: skip
    p.add_argument("--detector", action="append", metavar="NAME",
                   help=f"detector(s): {', '.join(DETECTORS)}; repeat or comma-separate")  # fmt: skip
    p.add_argument("--out", type=at.writable_dir, required=True, metavar="DIR", help="output directory")
    add_detect_options(p)
    p.add_argument("--n-boot", type=at.n_boot, default=1000, help="bootstrap resamples for the CIs")
    return p


def run(args: argparse.Namespace) -> int:
    if args.action != "report" and not args.detector:
        raise ConfigError("give --detector NAME (or 'railsweep detect report ...')")
    # pandas: loaded when the command runs, so `railsweep --help` and refusals of bad input stay fast
    from railsweep.commands.detect_run import run_detect

    return run_detect(args)
