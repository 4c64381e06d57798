"""The dynamics figures (matplotlib, Agg), one PNG each, from the analysis tables of one family."""

from __future__ import annotations

import numpy as np
import pandas as pd

from railsweep.dynamics.survival import loss_curve

MODELS = ("M_cl", "M_co")
COLORS = {"leaked": "tab:red", "unleaked": "tab:blue"}


def _subplots(*args, **kwargs):
    """``plt.subplots`` on the Agg backend (matplotlib is imported on first use)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(*args, **kwargs)


def _finish(fig, legends, fontsize: int = 7):
    """A legend on each of the axes ``legends``, then the tight layout; returns ``fig``."""
    for ax in legends:
        ax.legend(fontsize=fontsize)
    fig.tight_layout()
    return fig


def nll_by_position(pos: pd.DataFrame, fits: pd.DataFrame):
    """Mean gold NLL per position with the fitted E + A t^-alpha, per model and group."""
    fig, axes = _subplots(1, 2, figsize=(10, 4), sharey=True)
    gold = pos[pos["trajectory"] == "gold"]
    for ax, model in zip(axes, MODELS):
        for group, color in COLORS.items():
            df = gold[(gold["model"] == model) & (gold["leaked"] == (group == "leaked"))]
            if df.empty:
                continue
            mean = df.groupby("t")["nll"].mean()
            ax.plot(mean.index, mean.values, ".", color=color, alpha=0.6, label=f"{group} (mean)")
            f = fits[(fits["kind"] == "native") & (fits["model"] == model) & (fits["group"] == group)].iloc[0]
            t = np.arange(1, mean.index.max() + 1)
            label = f"fit E={f.E:.3f} A={f.A:.2f} α={f.alpha:.2f} ({f.regime})"
            ax.plot(t, loss_curve(t, f.E, f.A, f.alpha), "-", color=color, label=label)
        ax.set(title=model, xlabel="position t in the gold chain of thought")
    axes[0].set_ylabel("teacher-forced NLL (nats)")
    return _finish(fig, axes)


def logit_gaps(pos: pd.DataFrame):
    """Mean gold-token margin (gold) and top-1 minus top-2 gap (greedy) against ln t."""
    fig, axes = _subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, model in zip(axes, MODELS):
        for traj, col, style in (("gold", "margin", "-"), ("greedy", "gap", "--")):
            for group, color in COLORS.items():
                df = pos[(pos["model"] == model) & (pos["trajectory"] == traj)]
                df = df[df["leaked"] == (group == "leaked")]
                if df.empty:
                    continue
                mean = df.groupby("t")[col].mean()
                ax.plot(np.log(mean.index), mean.values, style, color=color, label=f"{group} {traj} {col}")
        ax.set(title=model, xlabel="ln t")
    axes[0].set_ylabel("logit difference")
    return _finish(fig, axes)


def calibration(pred: pd.DataFrame, predictor: str = "p_group", target: str = "solve"):
    """Predicted against observed per item, one panel per temperature."""
    taus = sorted(pred["tau"].unique())
    fig, axes = _subplots(1, len(taus), figsize=(3.2 * len(taus), 3.4), squeeze=False)
    for ax, tau in zip(axes[0], taus):
        df = pred[pred["tau"] == tau]
        for model, marker in zip(MODELS, ("o", "^")):
            for group, color in COLORS.items():
                part = df[(df["model"] == model) & (df["leaked"] == (group == "leaked"))]
                ax.scatter(part[predictor], part[target], s=10, marker=marker, color=color, alpha=0.5,
                           label=f"{model} {group}")  # fmt: skip
        ax.plot([0, 1], [0, 1], "k:", lw=1)
        ax.set(title=f"τ = {tau:g}", xlabel=f"predicted ({predictor})", xlim=(-0.03, 1.03),
               ylim=(-0.03, 1.03))  # fmt: skip
    axes[0][0].set_ylabel(f"observed ({target})")
    return _finish(fig, axes[0][-1:], fontsize=6)


def error_by_tau(acc: pd.DataFrame, target: str = "solve"):
    """Mean absolute error of each predictor per temperature, per model (all items)."""
    fig, axes = _subplots(1, 2, figsize=(10, 3.6), sharey=True)
    df = acc[(acc["subset"] == "all") & (acc["target"] == target)]
    for ax, model in zip(axes, MODELS):
        for p in sorted(df["predictor"].unique()):
            part = df[(df["model"] == model) & (df["predictor"] == p)].sort_values("tau")
            ax.plot(part["tau"], part["mae"], "o-", label=p)
        ax.set(title=f"{model}: |predicted − observed {target}|", xlabel="τ")
    axes[0].set_ylabel("mean absolute error")
    return _finish(fig, axes)


def memorisation_curve(rep: pd.DataFrame):
    """A replica world's memorisation curve: solve probability per model and temperature (left) and the
    loss probe's AUC against never-inserted items (right), against pretraining copies (symlog axis)."""
    fig, (left, right) = _subplots(1, 2, figsize=(10, 3.8))
    taus = sorted(float(c[len("solve_tau_") :])
                  for c in rep.columns
                  if c.startswith("solve_tau_") and c[-3:] not in ("_lo", "_hi"))  # fmt: skip
    for model, g in rep.groupby("model", sort=True):
        g = g.sort_values("replicas")
        ls = {"M_cl": "-", "M_co": "--"}.get(model, ":")
        for tau in taus:
            col = f"solve_tau_{tau:g}"
            err = np.vstack([g[col] - g[f"{col}_lo"], g[f"{col}_hi"] - g[col]])
            left.errorbar(g["replicas"], g[col], yerr=err, fmt="o" + ls, capsize=3,
                          label=f"{model} τ={tau:g}")  # fmt: skip
        h = g[g["replicas"] > 0]
        err = np.vstack([h["auc_vs_0"] - h["auc_vs_0_lo"], h["auc_vs_0_hi"] - h["auc_vs_0"]])
        right.errorbar(h["replicas"], h["auc_vs_0"], yerr=err, fmt="o" + ls, capsize=3, label=model)
    for ax in (left, right):
        ax.set_xscale("symlog", linthresh=1)
    left.set(xlabel="copies in pretraining", ylabel="solve probability", title="memorisation vs duplication")
    right.axhline(0.5, color="k", lw=0.5)
    right.set(xlabel="copies in pretraining", ylabel="ROC AUC vs 0 copies", title="loss probe (gold NLL)")
    right.legend(fontsize=8)
    return _finish(fig, [left])


def gain_vs_tau(gains: pd.DataFrame):
    """Model gain and split gain against temperature with their bootstrap CIs."""
    fig, ax = _subplots(figsize=(5.5, 3.8))
    for name, color in (("model_gain", "tab:red"), ("split_gain", "tab:purple")):
        g = gains.sort_values("tau")
        err = np.vstack([g[name] - g[f"{name}_lo"], g[f"{name}_hi"] - g[name]])
        ax.errorbar(g["tau"], g[name], yerr=err, fmt="o-", color=color, capsize=3, label=name)
    ax.axhline(0, color="k", lw=0.5)
    ax.set(xlabel="τ", ylabel="solve-probability gain", title="contamination gain vs temperature")
    return _finish(fig, [ax], fontsize=8)
