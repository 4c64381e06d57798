"""``railsweep detect report``: full-set and clean-subset scores side by side for the items a detector flagged.

Steps: 1. check every input (the per-question cell, the detections, one detector setting,
the weight, a writable ``--out``); 2. :func:`railsweep.detection.report.subset_report` (and
:func:`~railsweep.detection.report.sa_ppg_report` with ``--clean``); 3. print the table and
write ``OUT/report.csv``, ``OUT/report.md`` (``OUT/report_sa_ppg.csv``), each under a
temporary name and renamed into place.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from railsweep.atomic import write_atomic
from railsweep.detection.output import read_detections
from railsweep.detection.report import check_weight, flags_from_detections, sa_ppg_report, subset_report
from railsweep.errors import ConfigError
from railsweep.results.io import check_writable_dir, read_cell


def _markdown(table: pd.DataFrame) -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return "-" if v != v else f"{v:.3f}"
        return str(v)

    head = "| " + " | ".join(table.columns) + " |\n|" + "---|" * len(table.columns) + "\n"
    return head + "".join(
        "| " + " | ".join(cell(v) for v in row) + " |\n" for row in table.itertuples(index=False)
    )


def run_report(args: argparse.Namespace) -> int:
    # 1. check every input
    if not (args.questions and args.flags and args.detector):
        raise ConfigError("detect report needs --questions FILE, --flags DIR|FILE and --detector NAME")
    detectors = [n.strip() for r in args.detector for n in r.split(",") if n.strip()]
    if len(detectors) != 1:
        raise ConfigError(f"detect report takes one --detector, got {detectors}")
    check_weight(args.weight)
    if args.n_boot < 1:
        raise ConfigError(f"--n-boot must be >= 1, got {args.n_boot}")
    check_writable_dir(args.out)
    _, questions = read_cell(args.questions)
    clean = read_cell(args.clean)[1] if args.clean else None
    domain = args.domain[0] if args.domain else None
    family = args.family[0] if args.family else None
    flagged = flags_from_detections(read_detections(args.flags), detectors[0], args.setting, family, domain)

    # 2. the tables
    table = subset_report(questions, flagged, readout=args.readout, weight=args.weight, n_boot=args.n_boot,
                          seed=args.seed)  # fmt: skip
    pair = (
        sa_ppg_report(clean, questions, flagged, n_boot=args.n_boot, seed=args.seed)
        if clean is not None
        else None
    )

    # 3. print and write
    out = Path(args.out)
    md = _markdown(table)
    write_atomic(out / "report.csv", lambda tmp: table.to_csv(tmp, index=False))
    if pair is not None:
        md += "\n" + _markdown(pair)
        write_atomic(out / "report_sa_ppg.csv", lambda tmp: pair.to_csv(tmp, index=False))
    write_atomic(out / "report.md", lambda tmp: tmp.write_text(md, encoding="utf-8"))
    print(md, end="")
    print(
        f"wrote {out / 'report.csv'} ({len(flagged)} of {len(questions)} questions flagged by {detectors[0]})"
    )
    return 0
