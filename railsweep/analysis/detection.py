"""A detection table read back: the truth-scored summary, ROC curves and their figure (pandas + matplotlib).

The sweep's detection step and ``notebooks/analysis.ipynb`` both call these functions on the per-item table
(:data:`railsweep.detection.run.COLUMNS`), so the logged table and the notebook's cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from railsweep.analysis.plots import _plt, _save
from railsweep.detection.truth import KEYS, to_markdown, truth_table
from railsweep.metrics.auc import roc_curve

__all__ = ["curve_label", "roc_figure", "roc_frame", "truth_markdown", "truth_summary"]


def truth_summary(table: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """The truth table of a detection table (test items without the truth are left out of every figure)."""
    return truth_table(table, n_boot=n_boot, seed=seed)


def truth_markdown(summary: pd.DataFrame) -> str:
    return to_markdown(summary)


def curve_label(detector: str, setting: str, family: str | None) -> str:
    """``loss reference=clean (llama)``; corpus-side rows have no family."""
    fam = "" if family is None or family != family else f" ({family})"
    return f"{detector} {setting}{fam}"


def roc_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Columns detector, setting, family, domain, fpr, tpr: each group's ROC corners, in curve order."""
    frames = []
    for key, g in table[table["group"] == "test"].groupby(KEYS, dropna=False, sort=False):
        g = g[g["leaked"].notna()]
        fpr, tpr = roc_curve(g["score"].to_numpy(float), g["leaked"].to_numpy(bool))
        if fpr.size:
            frames.append(pd.DataFrame({**dict(zip(KEYS, key)), "fpr": fpr, "tpr": tpr}))
    cols = [*KEYS, "fpr", "tpr"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def roc_figure(table: pd.DataFrame, path: str | Path, title: str = "") -> Path | None:
    """ROC curves of every detector setting x family, one panel per domain (None when no curve exists):
    one colour per detector setting, one line style per family."""
    roc = roc_frame(table)
    if roc.empty:
        return None
    plt = _plt()
    domains = list(dict.fromkeys(roc["domain"]))
    fig, axes = plt.subplots(1, len(domains), figsize=(4.6 * len(domains), 4.4), squeeze=False)
    settings = list(dict.fromkeys(zip(roc["detector"], roc["setting"])))  # one colour per detector setting
    colours = {d: plt.get_cmap("tab10")(i % 10) for i, d in enumerate(settings)}
    families = [f for f in dict.fromkeys(roc["family"]) if f is not None and f == f]
    styles = {f: s for f, s in zip(families, ["-", "--", ":", "-."] * 4)}
    for ax, dom in zip(axes[0], domains):
        part = roc[roc["domain"] == dom]
        for key, g in part.groupby(["detector", "setting", "family"], dropna=False, sort=False):
            det, setting, fam = key
            ax.plot(g["fpr"], g["tpr"], color=colours[det, setting], linestyle=styles.get(fam, "-"), linewidth=1.3,
                    label=curve_label(det, setting, fam), drawstyle="default")  # fmt: skip
        ax.plot([0, 1], [0, 1], color="0.7", linewidth=0.8, linestyle=":")
        ax.set(xlim=(0, 1), ylim=(0, 1.01), xlabel="FPR (unleaked test items)", ylabel="TPR (leaked test items)",
               title=f"{title + ': ' if title else ''}{dom}")  # fmt: skip
        ax.legend(fontsize=6.5, loc="lower right")
    return _save(fig, path)

