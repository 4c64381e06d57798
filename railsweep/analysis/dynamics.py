"""The dynamics tables of a sweep with ``temperatures``, shaped for reading (pandas only): the tables its
dynamics step logged (:func:`railsweep.sweep.tracking.reader.read_dynamics`), selected and formatted, never
recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from railsweep.dynamics import plots

__all__ = ["figures", "fits_frame", "gain_frame", "groups", "prediction_frame", "replica_frame"]


def _ci(df: pd.DataFrame, name: str, digits: int = 2) -> pd.Series:
    """``value [lo, hi]`` strings of column ``name`` and its ``_lo``/``_hi`` columns."""
    f = f"{{:.{digits}f}}"

    def one(r) -> str:
        v, lo, hi = r[name], r[f"{name}_lo"], r[f"{name}_hi"]
        if pd.isna(v):
            return "n/a"
        ci = "" if pd.isna(lo) or pd.isna(hi) else f" [{f.format(lo)}, {f.format(hi)}]"
        return f.format(v) + ci

    return df.apply(one, axis=1) if len(df) else pd.Series([], dtype=str)


def groups(tables: Mapping[str, pd.DataFrame]) -> list[tuple[str, str]]:
    """The (family, domain) groups the tables hold, sorted."""
    g = tables["gains"][["family", "domain"]].drop_duplicates()
    return sorted(map(tuple, g.to_numpy().tolist()))


def gain_frame(gains: pd.DataFrame) -> pd.DataFrame:
    """Contamination gain versus tau per group: the model gain (M_co − M_cl on leaked items) and the split
    gain (M_co: leaked − unleaked) with 95 % CIs, and each one's collapse factor gain(greedy)/gain(tau)."""
    g = gains.sort_values(["family", "domain", "tau"]).reset_index(drop=True)
    out = {c: g[c] for c in ("family", "domain", "tau")}
    out |= {"model gain": _ci(g, "model_gain"), "model collapse": _ci(g, "model_gain_collapse"),
            "split gain": _ci(g, "split_gain"), "split collapse": _ci(g, "split_gain_collapse")}
    return pd.DataFrame(out)


def fits_frame(fits: pd.DataFrame) -> pd.DataFrame:
    """The native per-token NLL fits ``E + A t^-alpha`` per group × model × leaked/unleaked, with CIs and
    the regime."""
    f = (fits[fits["kind"] == "native"]
         .sort_values(["family", "domain", "model", "group"])
         .reset_index(drop=True))  # fmt: skip
    out = {c: f[c] for c in ("family", "domain", "model", "group")}
    out |= {"items": f["n_items"], "E": _ci(f, "E", 3), "A": _ci(f, "A"), "alpha": _ci(f, "alpha"),
            "regime": f["regime"]}
    return pd.DataFrame(out)


def prediction_frame(accuracy: pd.DataFrame, predictor: str = "p_group", target: str = "solve",
                     subset: str = "all") -> pd.DataFrame:  # fmt: skip
    """Predicted P(T) (``predictor``; ``p_group``: the group fit with alpha_eff = alpha/tau) against the
    observed ``target`` per group, model and tau: means, mean absolute error and Spearman rank correlation."""
    a = accuracy[
        (accuracy["predictor"] == predictor) & (accuracy["target"] == target) & (accuracy["subset"] == subset)
    ]
    cols = ["family", "domain", "model", "tau", "n", "mean_pred", "mean_obs", "mae", "spearman"]
    return a.sort_values(["family", "domain", "model", "tau"])[cols].reset_index(drop=True)


def replica_frame(replicas: pd.DataFrame) -> pd.DataFrame:
    """A replica world's memorisation curve per group × model × pretraining copies: solve probability at each
    sampled tau with 95 % CIs, the gold NLL (nats/token), its fit and regime, and the loss probe's ROC AUC
    against the never-inserted items (:mod:`railsweep.dynamics.replicas`)."""
    r = replicas.sort_values(["family", "domain", "model", "replicas"]).reset_index(drop=True)
    out = {c: r[c] for c in ("family", "domain", "model", "replicas", "n_items")}
    solve = [c for c in r.columns if c.startswith("solve_tau_") and not c.endswith(("_lo", "_hi"))]
    for c in sorted(solve, key=lambda c: float(c[len("solve_tau_") :])):
        out[f"solve τ={c[len('solve_tau_') :]}"] = _ci(r, c)
    out["gold NLL"] = r["nll"].round(3)
    out["E"], out["alpha"], out["regime"] = _ci(r, "E", 3), _ci(r, "alpha"), r["regime"]
    out["loss AUC vs 0"] = _ci(r, "auc_vs_0")
    return pd.DataFrame(out)


def figures(tables: Mapping[str, pd.DataFrame], out_dir: str | Path) -> dict[str, Path]:
    """Per group, ``gain_vs_tau_<family>_<domain>.png``, ``calibration_<family>_<domain>.png`` (P(T) from
    the group fit against the observed solve probability, one panel per tau) and, for a replica world,
    ``memorisation_curve_<family>_<domain>.png``; the paths by name."""
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for fam, dom in groups(tables):
        gains, pred = (tables[n][(tables[n]["family"] == fam) & (tables[n]["domain"] == dom)]
                       for n in ("gains", "predictions"))  # fmt: skip
        drawn = [(f"gain_vs_tau_{fam}_{dom}", plots.gain_vs_tau(gains)),
                 (f"calibration_{fam}_{dom}", plots.calibration(pred, "p_group", "solve"))]  # fmt: skip
        if "replicas" in tables:
            rep = tables["replicas"]
            rep = rep[(rep["family"] == fam) & (rep["domain"] == dom)]
            if len(rep):
                drawn.append((f"memorisation_curve_{fam}_{dom}", plots.memorisation_curve(rep)))
        for name, fig in drawn:
            paths[name] = out / f"{name}.png"
            fig.savefig(paths[name], dpi=100)
            plt.close(fig)
    return paths
