"""What ``railsweep score`` does once its options are checked (:func:`score_cells`). Loads pandas and pyarrow
(the command imports it when it runs)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from railsweep.analysis.report import PAIRED_METRICS
from railsweep.analysis.scoring import flatten_scores, paired_difference, score_pair
from railsweep.analysis.table_writers import to_markdown
from railsweep.analysis.tables import LABELS, metric_table
from railsweep.atomic import synced_text, write_all_atomic
from railsweep.errors import DataError
from railsweep.limits import check_bootstrap_memory
from railsweep.metrics import METRICS
from railsweep.metrics.concentration import describe_occupancy
from railsweep.results.io import read_cell, read_metadata


def score_cells(args: argparse.Namespace) -> int:
    """Steps: 1. read and check every input; 2. score each cell against the clean reference (and against an
    Identity cell); 3. write ``PREFIX.csv`` and ``PREFIX.md`` atomically, then print the Markdown."""
    clean_cell, clean_df, cells = _read_cells(args)
    labels = [cell.label() for _, cell, _ in cells]
    labels = [lab if labels.count(lab) == 1 else f"{lab} ({cell.cell_id})" for lab, (_, cell, _) in zip(labels, cells)]
    scored, rows = _score(args, clean_cell, clean_df, cells, labels)
    title = (
        f"Scores vs clean cell {clean_cell.cell_id} (answer rule {clean_cell.answer_rule}, B={args.B}, "
        f"{1 - args.alpha:.0%} intervals: bootstrap ({args.n_boot} resamples) for the means, jackknife for the "
        f"stratified metrics; last row: the noise floor)"
    )
    markdown = to_markdown(metric_table(scored, list(METRICS), title=title))
    paired = _paired_with_identity(args, clean_df, cells, labels, rows)
    if paired:
        markdown += "\n" + paired
    prefix = Path(args.out)
    csv_path, md_path = prefix.with_name(prefix.name + ".csv"), prefix.with_name(prefix.name + ".md")
    write_all_atomic({csv_path: synced_text(pd.DataFrame(rows).to_csv(index=False)), md_path: synced_text(markdown)})
    print(markdown)
    print(f"wrote {csv_path} and {md_path}")
    return 0


def _read_cells(args: argparse.Namespace) -> tuple[Any, pd.DataFrame, list[tuple[str, Any, pd.DataFrame]]]:
    """The clean cell, its table and every ``(path, cell, table)`` of ``--mitigated``, checked to be read on the
    same questions and graded under the same rule, and small enough to bootstrap."""
    clean_cell, clean_df = read_cell(args.clean)
    if clean_cell.role != "clean":
        raise DataError(
            f"--clean {args.clean}: expected a clean reference cell (role='clean'), got role={clean_cell.role!r}"
        )
    cells = [(path, *read_cell(path)) for path in args.mitigated]
    clean_sum = _split_checksum(args.clean, clean_cell)
    for path, cell, _ in cells:
        other = _split_checksum(path, cell)
        if clean_sum and other and clean_sum != other:
            raise DataError(
                f"{path} was evaluated on different question data than {args.clean} "
                f"({cell.split}.jsonl sha256 {other[:12]}… vs {clean_sum[:12]}…)"
            )
        for what in ("answer_rule", "answer_type"):  # a solve probability means what its rule reads
            if getattr(cell, what) != getattr(clean_cell, what):
                raise DataError(
                    f"{path} was graded under {what} {getattr(cell, what)!r} but the clean cell {args.clean} "
                    f"under {getattr(clean_cell, what)!r}; score cells graded under the same rule"
                )
    check_bootstrap_memory(args.n_boot, max(len(clean_df), *(len(df) for _, _, df in cells)))
    return clean_cell, clean_df, cells


def _score(args, clean_cell, clean_df, cells, labels: list[str]) -> tuple[list[dict], list[dict]]:
    """Each cell scored against the clean reference: the cells the metric table shows, and the CSV's rows."""
    scored, rows = [], []
    for label, (path, cell, df) in zip(labels, cells):
        try:
            score = score_pair(clean_df, df, B=args.B, n_boot=args.n_boot, seed=args.seed, alpha=args.alpha)
        except DataError as e:
            raise DataError(f"{path} vs {args.clean}: {e}") from e
        scored.append({"family": clean_cell.family, "domain": clean_cell.domain, "strategy": label, "score": score})
        rows.append({"strategy": label, "cell_id": cell.cell_id, "adapter": cell.adapter, "m": cell.m,
                     "answer_rule": cell.answer_rule, "file": str(path), **flatten_scores(score),
                     "stratum_occupancy": describe_occupancy(score["stratum_n"])})  # fmt: skip
    return scored, rows


def _paired_with_identity(args, clean_df, cells, labels: list[str], rows: list[dict]) -> str:
    """With one Identity cell among ``cells``: SA-PPG, A-PPG and G-AP of every other cell minus Identity's on
    the same questions, with the interval and verdict, added to ``rows`` as ``<metric>_vs_identity*`` and
    returned as Markdown ("" otherwise)."""
    ident = [i for i, (_, cell, _) in enumerate(cells) if cell.strategy == "identity"]
    if len(ident) != 1 or len(cells) < 2:  # no Identity, or nothing to compare with it
        return ""
    ref = cells[ident[0]][2]
    lines = [f"**Paired differences against {labels[ident[0]]} (same questions; lower = closer to M_cl)**",
             "", "| strategy | metric | strategy − Identity | 95 % interval | verdict |",
             "|---|---|:---:|:---:|---|"]  # fmt: skip
    for i, (_, _, df) in enumerate(cells):
        if i == ident[0]:
            continue
        for metric in PAIRED_METRICS:
            d = paired_difference(clean_df, df, ref, metric, B=args.B, n_boot=args.n_boot, seed=args.seed,
                                  alpha=args.alpha)  # fmt: skip
            key = f"{metric}_vs_identity"
            rows[i].update({key: d["difference"], f"{key}_ci_low": d["ci_low"], f"{key}_ci_high": d["ci_high"],
                            f"{key}_verdict": d["verdict"]})  # fmt: skip
            ci = f"[{d['ci_low']:+.2f}, {d['ci_high']:+.2f}]" if d["interval"] != "none" else "—"
            lines.append(f"| {labels[i]} | {LABELS[metric]} | {d['difference']:+.4f} | {ci} | {d['verdict']} |")
    return "\n".join(lines) + "\n"


def _split_checksum(path: str, cell: Any) -> str | None:
    """sha256 of the evaluation split the cell read, from its provenance (None when not recorded)."""
    datasets = read_metadata(path)["provenance"].get("datasets") or {}
    hits = [sha for p, sha in datasets.items() if Path(p).name == f"{cell.split}.jsonl"]
    return hits[0] if len(hits) == 1 else None
