"""Detectors scored against the truth: per detector setting x family x domain, from a detection table.

Per group of rows (one detector setting, one family, one domain):
- ``auc`` (with a stratified bootstrap CI): test items, leaked (positive) against unleaked;
- ``tpr``: share of the leaked test items flagged at the group's threshold;
- ``fpr_unleaked``: share of the unleaked test items flagged (out-of-sample false positives);
- ``control_rate``: share of the control items flagged (in-sample when the threshold was
  calibrated on them, so at most the calibration rate).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from railsweep.detection.scoring import flag_rate
from railsweep.metrics.auc import auc_ci, roc_auc

KEYS = ["detector", "setting", "family", "domain"]


def truth_table(table: pd.DataFrame, n_boot: int = 1000, alpha: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """One row per (detector, setting, family, domain) with the truth-scored figures above."""
    rows = []
    rng = np.random.default_rng(seed)
    for key, g in table.groupby(KEYS, dropna=False, sort=False):
        test = g[(g.group == "test") & g.leaked.notna()]
        ctrl = g[g.group == "control"]
        score, label = test.score.to_numpy(float), test.leaked.to_numpy(bool)
        t = float(g.threshold.iloc[0])
        lo, hi = auc_ci(score, label, n_boot, alpha, rng)
        rows.append(
            {**dict(zip(KEYS, key)), "auc": roc_auc(score, label), "auc_lo": lo, "auc_hi": hi, "threshold": t,
             "threshold_source": g.threshold_source.iloc[0], "tpr": flag_rate(score[label], t),
             "fpr_unleaked": flag_rate(score[~label], t), "control_rate": flag_rate(ctrl.score.to_numpy(float), t),
             "n_leaked": int(label.sum()), "n_unleaked": int((~label).sum()), "n_control": len(ctrl)}
        )  # fmt: skip
    return pd.DataFrame(rows)


def to_markdown(summary: pd.DataFrame) -> str:
    """The truth table as Markdown (3 decimals; the AUC with its CI)."""

    def f(x: float) -> str:
        return "-" if x != x else f"{x:.3f}"

    def label(x) -> str:
        return "-" if x is None or x != x else str(x)

    head = "| detector | setting | family | domain | AUC [95% CI] | threshold | TPR | FPR (unleaked) | control flag rate |"
    lines = [head, "|" + "---|" * 9]
    for r in summary.itertuples():
        lines.append(f"| {r.detector} | {r.setting} | {label(r.family)} | {label(r.domain)} | "
                     f"{f(r.auc)} [{f(r.auc_lo)}, {f(r.auc_hi)}] | {f(r.threshold)} ({r.threshold_source}) | "
                     f"{f(r.tpr)} | {f(r.fpr_unleaked)} | {f(r.control_rate)} |")  # fmt: skip
    return "\n".join(lines) + "\n"
