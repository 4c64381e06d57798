"""``railsweep detect``: score contamination detectors per item, and against the truth where it is known.

Two ways in:
- files: ``--test`` (GSM8K-format JSONL; ``--leak-split`` adds the truth), ``--control``
  (items known to be absent; thresholds are calibrated on them), and each detector's
  inputs (``--corpus`` for ngram, ``--model``/``--adapter``/``--reference-adapter`` for
  loss, mink and cdd, ``--responses`` for cdd);
- ``--world PRESET|DIR``: a miniature world already built. Its test split and leak split,
  fresh control problems and, per ``--domain``, the adapters' training corpus and the
  ``co_<domain>`` adapter of every ``--family`` (reference: ``clean``).

- ``--detector perturb --original CELL.parquet --paraphrased CELL.parquet``: two per-question
  tables of one model and strategy, on the original wording and on its paraphrase (the test
  items are their questions unless ``--test`` is given).

``--ray`` scans the ngram detector's corpus as a Ray Data job (:mod:`railsweep.detection.ngram_ray`;
the same scores and flags) on the cluster at ``--ray-address``, else on a private local Ray
instance started and stopped for the run (:mod:`railsweep.commands.detect_ray`).

``railsweep detect report --questions CELL.parquet --flags DIR --detector NAME`` reports
instead: the full-set and clean-subset scores side by side (``--weight w`` adds the
down-weighted score; ``--clean CELL.parquet`` adds SA-PPG and the other paired metrics
of ``--questions`` against that clean cell), printed and written to ``OUT/report.csv``,
``OUT/report.md`` (and ``OUT/report_sa_ppg.csv``). See :mod:`railsweep.detection.report`.

Writes ``OUT/detections.parquet`` (one row per item per detector setting, see
:mod:`railsweep.detection.output`). When the truth is known it also writes
``OUT/truth.csv`` and ``OUT/truth.md`` and prints the truth table. Every input
is checked before any scoring, and every file is written under a temporary
name and then renamed.
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
    p.add_argument(
        "action",
        nargs="?",
        choices=("report",),
        help="report: full-set vs clean-subset scores for the items a detector flagged",
    )
    p.add_argument("--detector", action="append", metavar="NAME",
                   help=f"detector(s): {', '.join(DETECTORS)}; repeat or comma-separate")  # fmt: skip
    p.add_argument("--out", type=at.writable_dir, required=True, metavar="DIR", help="output directory")
    add_detect_options(p)
    p.add_argument("--n-boot", type=at.n_boot, default=1000, help="bootstrap resamples for the CIs")
    return p


def run(args: argparse.Namespace) -> int:
    if args.action != "report" and not args.detector:
        raise ConfigError("give --detector NAME (or 'railsweep detect report ...')")
    # pandas: the detections' and the report's tables, loaded when the command runs, so `railsweep --help` and
    # refusals of bad input stay fast
    from railsweep.commands.detect_run import run_detect

    return run_detect(args)
