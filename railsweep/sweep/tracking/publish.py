"""Publish a sweep: its finished cells in MLflow → Tables 1–4 and figures on the sweep's parent run.

A Ray task of the driver's that reads only from MLflow, so it can be rerun later against any sweep. Steps:
1. read the sweep back (:func:`railsweep.sweep.tracking.reader.read_sweep`);
2. score every mitigated cell against its clean reference (the scores its trial logged);
3. build Tables 1–4 (Markdown, CSV, HTML), ``all_cells.csv``, the paired differences against Identity with
   their verdicts (``paired_identity.csv`` / ``.md``) and the figures;
4. log them under ``tables/`` and ``figures/`` of the parent run, and each cell's paired differences and
   verdicts on the cell's own run (``<metric>_vs_identity*``, tags ``railsweep.verdict.<metric>``);
5. give the parent run the summary (:func:`parent_summary`);
6. return the Markdown of each table (the driver prints one).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from railsweep.analysis import report
from railsweep.analysis.table_writers import to_markdown, write_table
from railsweep.sweep.tracking.reader import read_sweep
from railsweep.sweep.tracking.tracker import TAG_VALUE_LIMIT, Tracker


def publish_sweep(tracking_uri: str, parent_run_id: str) -> dict[str, Any]:
    """Steps 1–6; returns ``{"markdown": {"tableN": md}, "missing": [cell ids], "n_scored": int}``."""
    tracker = Tracker(tracking_uri)
    with tempfile.TemporaryDirectory(prefix="railsweep-publish-") as tmp_s:
        tmp = Path(tmp_s)
        sweep = read_sweep(tracker, parent_run_id=parent_run_id, download_dir=tmp / "dl")
        scored = report.score_sweep(sweep)
        markdown = {}
        for name, table in report.paper_tables(scored, sweep.primary).items():
            write_table(table, tmp / "tables", name)
            markdown[name] = to_markdown(table)
        (tmp / "tables").mkdir(exist_ok=True)
        report.scores_frame(scored).to_csv(tmp / "tables" / "all_cells.csv", index=False)
        paired = report.paired_against_identity(sweep, scored)
        if len(paired):
            paired.to_csv(tmp / "tables" / "paired_identity.csv", index=False)
            markdown["paired_identity"] = report.paired_markdown(paired)
            (tmp / "tables" / "paired_identity.md").write_text(markdown["paired_identity"], encoding="utf-8")
            runs = {c.cell_id: c.run_id for c in sweep.cells}
            for cell_id, (metrics, tags) in report.verdict_logs(paired).items():
                if runs.get(cell_id):
                    tracker.log(runs[cell_id], metrics=metrics, tags=tags)
        metrics, tags = parent_summary(scored, paired, markdown)
        tracker.log(parent_run_id, metrics=metrics, tags=tags)
        report.figures(sweep, scored, tmp / "figures")
        for sub in ("tables", "figures"):
            for f in sorted((tmp / sub).iterdir()):
                tracker.log_artifact(parent_run_id, f, sub)
    return {"markdown": markdown, "missing": sweep.missing, "n_scored": len(scored)}


def _key(*parts: str) -> str:
    """An MLflow metric name from label parts: characters MLflow refuses (``=``, brackets) become ``_``."""
    return "/".join(re.sub(r"[^\w.\- ]", "_", p) for p in parts)


def parent_summary(scored: Sequence[Mapping[str, Any]], paired: pd.DataFrame,
                   markdown: Mapping[str, str]) -> tuple[dict[str, float], dict[str, str]]:  # fmt: skip
    """The parent run's metrics, SA-PPG of every scored cell and, against an Identity cell, SA-PPG − Identity;
    its description (``mlflow.note.content``): Table 3 and the paired differences in Markdown."""
    metrics = {_key("sa_ppg", s["family"], s["domain"] or "all", s["strategy"]): float(s["score"]["sa_ppg"]["value"])
               for s in scored}  # fmt: skip
    by_id = {s["cell_id"]: s for s in scored}
    for r in paired[paired["metric"] == report.LABELS["sa_ppg"]].itertuples(index=False) if len(paired) else ():
        s = by_id[r.cell_id]
        metrics[_key("sa_ppg_vs_identity", s["family"], s["domain"] or "all", s["strategy"])] = float(r.difference)
    note = markdown.get("table3", "No cell of this sweep was scored.")
    if "paired_identity" in markdown:
        whole = note + "\n\n" + markdown["paired_identity"]
        note = whole if len(whole) <= TAG_VALUE_LIMIT else note + "\n\nPaired differences: `tables/paired_identity.md`."
    return metrics, {"mlflow.note.content": note[:TAG_VALUE_LIMIT]}
