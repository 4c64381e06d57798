"""Figures of a sweep and of ``railsweep figure1`` (matplotlib, Agg backend; each function writes one PNG and
returns its path), from the per-question tables of the results schema (``question_index, c, m, solve_prob,
r01``) or the responses table (``question_index, sample_index, correct``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from railsweep.atomic import write_atomic
from railsweep.metrics.readout import readout_stability
from railsweep.metrics.stratified import stratify, stratum_table


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    # the temporary's name ends in .tmp: the format comes from the target's suffix
    write_atomic(path, lambda tmp: fig.savefig(tmp, format=path.suffix[1:] or "png", dpi=110, bbox_inches="tight"))
    _plt().close(fig)
    return path


def _paired(clean: pd.DataFrame, mitigated: pd.DataFrame) -> pd.DataFrame:
    return clean[["question_index", "c", "m", "solve_prob"]].merge(
        mitigated[["question_index", "c", "m", "solve_prob"]], on="question_index", suffixes=("_cl", "_co")
    )


def scatter_clean_vs_mitigated(clean: pd.DataFrame, mitigated: pd.DataFrame, path: str | Path,
                               title: str = "") -> Path:  # fmt: skip
    """One marker per (r_cl, r_co) point, its area the number of questions there (solve probabilities sit on the
    c/m grid, so many questions share a point); leaked questions orange, unleaked blue, side by side."""
    plt = _plt()
    j = _paired(clean, mitigated)
    if "leaked" in mitigated:
        j = j.merge(mitigated[["question_index", "leaked"]], on="question_index")
    fig, ax = plt.subplots(figsize=(4.4, 4.4))
    groups = [(None, "tab:blue", "questions")]
    if "leaked" in j and j["leaked"].notna().any():
        groups = [(False, "tab:blue", "unleaked"), (True, "tab:orange", "leaked")]
    for flag, colour, name in groups:
        part = j if flag is None else j[j["leaked"] == flag]
        counts = part.groupby(["solve_prob_cl", "solve_prob_co"]).size().reset_index(name="n")
        ax.scatter(counts["solve_prob_cl"], counts["solve_prob_co"], s=12 * counts["n"], alpha=0.5, c=colour,
                   edgecolors="white", linewidths=0.4, label=f"{name} ({len(part)})")  # fmt: skip
    ax.legend(loc="upper left", fontsize=7, markerscale=0.6, title="marker area = questions", title_fontsize=6)
    ax.plot([0, 1], [0, 1], color="grey", lw=0.8, ls="--")
    ax.set(xlim=(-0.04, 1.04), ylim=(-0.04, 1.04), xlabel=r"clean solve probability $r_{cl}(q)$",
           ylabel=r"mitigated solve probability $r^{s}_{co}(q)$")  # fmt: skip
    ax.set_title(title, fontsize=8)
    return _save(fig, path)


def sappg_bars(scores: pd.DataFrame, path: str | Path, metric: str = "SA-PPG") -> Path:
    """Grouped bars. ``scores``: columns ``setting, strategy, value, ci_low, ci_high`` (one row per cell)."""
    plt = _plt()
    settings = list(dict.fromkeys(scores["setting"]))
    strategies = list(dict.fromkeys(scores["strategy"]))
    width = 0.8 / max(len(strategies), 1)
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(settings) + 2), 3.6))
    x = np.arange(len(settings))
    for i, strat in enumerate(strategies):
        part = scores[scores["strategy"] == strat].set_index("setting").reindex(settings)
        val = part["value"].to_numpy(float)
        err = np.vstack([val - part["ci_low"].to_numpy(float), part["ci_high"].to_numpy(float) - val])
        ax.bar(x + (i - (len(strategies) - 1) / 2) * width, val, width, yerr=np.nan_to_num(np.abs(err)),
               capsize=2, label=strat)  # fmt: skip
    ax.set_xticks(x, settings, rotation=20, fontsize=8)
    ax.set_ylabel(f"{metric} (lower is better)")
    ax.legend(fontsize=7, ncol=2)
    return _save(fig, path)


def stratum_deltas(clean: pd.DataFrame, mitigated: Mapping[str, pd.DataFrame], path: str | Path, B: int = 50,
                   title: str = "") -> Path:  # fmt: skip
    """S-Δ+ (up) and S-Δ− (down) per stratum of r_cl, one line per strategy (empty strata are gaps)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, df in mitigated.items():
        j = _paired(clean, df)
        strata = stratify(j["c_cl"].to_numpy(), j["m_cl"].to_numpy(), B)
        delta = j["solve_prob_co"].to_numpy(float) - j["solve_prob_cl"].to_numpy(float)
        t = stratum_table(delta, strata, B)
        centre = t["lower"] + 0.5 / B
        (line,) = ax.plot(centre, t["mean_pos"], marker="^", ms=3, lw=1, label=label)
        ax.plot(centre, -t["mean_neg"], marker="v", ms=3, lw=1, ls="--", color=line.get_color())
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel="clean solve probability stratum", ylabel="S-Δ+ (above 0) / −S-Δ− (below 0)", xlim=(0, 1))
    ax.set_title(title, fontsize=8)
    strategies = ax.legend(fontsize=7, loc="lower left", title="strategy", title_fontsize=7)
    ax.add_artist(strategies)
    styles = [plt.Line2D([], [], color="black", marker="^", ms=3, lw=1, label="S-Δ+ (solid)"),
              plt.Line2D([], [], color="black", marker="v", ms=3, lw=1, ls="--", label="−S-Δ− (dashed)")]  # fmt: skip
    ax.legend(handles=styles, fontsize=7, loc="upper right")
    return _save(fig, path)


def stability_curve(responses: pd.DataFrame, ms: Sequence[int] | None = None) -> pd.DataFrame:
    """Readout stability (columns ``m, gap``) from one cell's responses: each question's samples split into two
    independent halves, the solve probability of the first k samples of each compared, for k in ``ms``."""
    r = responses[responses["sample_index"] >= 0]
    corr = r.pivot_table(index="question_index", columns="sample_index", values="correct", aggfunc="first")
    a = corr.to_numpy(dtype=float)
    if a.size == 0 or np.isnan(a).any():
        raise ValueError("readout stability needs the same number of graded samples for every question")
    half = a.shape[1] // 2
    if half < 1:
        raise ValueError(f"readout stability needs at least 2 samples per question, got {a.shape[1]}")
    ks = sorted({k for k in (ms or (1, 2, 5, 10, 25, 50)) if 1 <= k <= half} | {1, half})
    gaps = [float(readout_stability(a[:, :k].mean(1), a[:, half : half + k].mean(1))) for k in ks]
    return pd.DataFrame({"m": ks, "gap": gaps})


def readout_stability_plot(curves: Mapping[str, pd.DataFrame], path: str | Path) -> Path:
    """Paper Fig. 2: mean per-question gap between two batches of the same model against m."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    for label, c in curves.items():
        ax.plot(c["m"], c["gap"], marker="o", ms=3, label=label)
    ax.set_xscale("log")
    ticks = sorted({int(m) for c in curves.values() for m in c["m"]})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.set(xlabel="samples per question m (log scale)", ylabel="mean |r_batch1 − r_batch2| per question")
    ax.set_title("readout stability: two batches of the same model (paper Fig. 2)", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def figure1_plot(rows: pd.DataFrame | Sequence[Mapping], summary: Mapping, path: str | Path) -> Path:
    """The paper's Figure 1 and its two companions (rows and summary of :mod:`railsweep.diagnostics.figure1`).

    (a) per-question mean ROUGE-L of samples to the greedy response, leaked vs unleaked, per model;
    (b) rank of M_cl's token under M_co at the first divergence (leaked questions);
    (c) distinct correct responses of M_cl per question; (d) M_cl's solve rate on and off its rail.
    """
    df = pd.DataFrame(list(rows)) if not isinstance(rows, pd.DataFrame) else rows
    plt = _plt()
    fig, ax = plt.subplots(1, 4, figsize=(17, 3.6))
    for k, (model, colour) in enumerate((("clean", "tab:blue"), ("contaminated", "tab:red"))):
        for j, leaked in enumerate((True, False)):
            v = df[(df["model"] == model) & (df["leaked"] == leaked)]["greedy_rouge_l"].to_numpy()
            x = 2 * k + j + np.random.default_rng(0).uniform(-0.15, 0.15, len(v))
            ax[0].scatter(x, v, s=6, alpha=0.35, color=colour)
            if len(v):
                ax[0].scatter([2 * k + j], [v.mean()], s=60, color=colour, edgecolor="black")
    ax[0].set_xticks(range(4), ["M_cl leaked", "M_cl unleaked", "M_co leaked", "M_co unleaked"], fontsize=7)
    ax[0].set_ylabel("ROUGE-L to greedy")
    ax[0].set_title("(a) collapse onto the greedy response")
    hist = summary.get("first_rank_hist_leaked", {})
    ax[1].bar(list(hist), list(hist.values()), color="tab:purple")
    ax[1].set_xlabel("rank of M_cl's token under M_co (6 = 6+)")
    ax[1].set_title(f"(b) first divergence: runner-up {summary.get('runner_up_share_first_leaked', np.nan):.2f}")
    clean = df[df["model"] == "clean"]
    ax[2].hist(clean["distinct_correct"].dropna(), bins=20, color="tab:green")
    ax[2].set_xlabel("distinct correct responses of M_cl")
    ax[2].set_title("(c) path diversity")
    ax[3].bar(["on rail", "one forced departure"],
              [summary.get("on_rail_r", np.nan), summary.get("off_rail_r", np.nan)])  # fmt: skip
    ax[3].set_ylim(0, 1)
    ax[3].set_title(f"(d) M_cl off its rail: ratio {summary.get('off_rail_ratio', np.nan):.2f}")
    fig.tight_layout()
    return _save(fig, path)
