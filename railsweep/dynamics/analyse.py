"""From one family's collected data to the dynamics tables (pure numpy/pandas/scipy, no model).

Steps of :func:`analyse`:
1. positions: one row per model x item x trajectory (gold / greedy) x position;
2. fits per model x group (leaked / unleaked): the native fit of the gold NLL curve with item-bootstrap
   CIs and its regime; the slope of the mean logit margin (gold) and of the mean top-1 minus top-2 gap
   (greedy) against ln t; and per tau > 0 the fit of the temperature-scaled NLL curve, whose alpha is
   set beside alpha / tau;
3. predictions per model x item x tau: P(T) from the group fit and from the item's own fit (alpha_eff =
   alpha / tau, T = the gold chain of thought's tokens), and the exact teacher-forced probability of
   sampling the gold verbatim at tau, exp(-sum_t L_t(tau)); beside the observed solve probability and
   verbatim share;
4. accuracy per model x tau x subset x predictor x target: mean absolute error and Spearman correlation;
5. contamination gain versus tau with bootstrap CIs and the collapse factor (:mod:`~railsweep.dynamics.gain`);
6. in a pretraining-replica world, the memorisation curve (:mod:`~railsweep.dynamics.replicas`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from railsweep.dynamics.family_data import FamilyData
from railsweep.dynamics.gain import gain_table
from railsweep.dynamics.powerlaw import fit_curve, fit_gap_slope, fit_group, mean_curve
from railsweep.dynamics.regimes import regime
from railsweep.dynamics.replicas import replica_table
from railsweep.dynamics.settings import DynamicsSettings
from railsweep.dynamics.survival import survival_at
from railsweep.errors import ConfigError

PREDICTORS = ("p_group", "p_item", "p_tf")
TARGETS = ("solve", "verbatim")


@dataclass
class Tables:
    positions: pd.DataFrame
    fits: pd.DataFrame
    predictions: pd.DataFrame
    accuracy: pd.DataFrame
    gains: pd.DataFrame
    replicas: pd.DataFrame | None = None  # a replica world's memorisation curve (railsweep.dynamics.replicas)


def _groups(d: FamilyData):
    return {"leaked": np.flatnonzero(d.leaked), "unleaked": np.flatnonzero(~d.leaked)}


def positions_table(d: FamilyData) -> pd.DataFrame:
    frames = []
    for model in d.gold:
        for traj, stats in (("gold", d.gold[model]), ("greedy", d.greedy[model])):
            for i, st in enumerate(stats):
                T = len(st.token_ids)
                if not T:
                    continue
                cols = {"family": d.family, "model": model, "item": d.items[i], "leaked": bool(d.leaked[i]),
                        "trajectory": traj, "t": np.arange(1, T + 1), "token_id": st.token_ids,
                        "nll": st.nll, "gap": st.gap, "margin": st.margin}  # fmt: skip
                for tau, v in st.nll_tau.items():
                    cols[f"nll_tau_{tau:g}"] = v
                frames.append(pd.DataFrame(cols))
    return pd.concat(frames, ignore_index=True)


def _safe_fit(t, y):
    try:
        return fit_curve(t, y)
    except ConfigError:
        return None


def fits_table(d: FamilyData, s: DynamicsSettings, rng: np.random.Generator) -> pd.DataFrame:
    """Per model and item group (leaked, unleaked): the native row, then the teacher-forced-at-tau rows."""
    rows = []
    for model in d.gold:
        for group, idx in _groups(d).items():
            if idx.size == 0:
                continue
            native = _native_row(d, model, group, idx, s, rng)
            rows += [native, *_tau_rows(d, model, idx, s, native)]
    return pd.DataFrame(rows)


def _native_row(d: FamilyData, model: str, group: str, idx: np.ndarray, s: DynamicsSettings,
                rng: np.random.Generator) -> dict:  # fmt: skip
    """The ``native`` row: the fit of the gold per-token loss (tau 1) with its bootstrap intervals, its regime,
    and the slopes of the gold margin and the greedy gap with theirs."""
    g = fit_group([d.gold[model][i].nll for i in idx], n_boot=s.n_boot, min_items=s.min_items, rng=rng)
    f = g.fit
    row = {"family": d.family, "model": model, "group": group, "n_items": g.n_items, "kind": "native", "tau": 1.0,
           **g.columns(), "rmse": f.rmse, "positions": f.positions, "regime": regime(f.E, f.alpha, s.e_cut)}  # fmt: skip
    for name, curves in (("margin_slope", [d.gold[model][i].margin for i in idx]),
                         ("greedy_gap_slope", [d.greedy[model][i].gap for i in idx])):  # fmt: skip
        _, slope, (lo, hi) = fit_gap_slope(curves, n_boot=s.n_boot, min_items=s.min_items, rng=rng)
        row |= {name: slope, f"{name}_lo": lo, f"{name}_hi": hi}
    return row | {"alpha_over_tau": f.alpha}


def _tau_rows(d: FamilyData, model: str, idx: np.ndarray, s: DynamicsSettings, native: dict) -> list[dict]:
    """One ``teacher_forced_at_tau`` row per tau > 0: the fit of the loss teacher-forced at tau, beside the
    native alpha over tau."""
    base = {k: native[k] for k in ("family", "model", "group", "n_items")}
    rows = []
    for tau in s.temperatures:
        if tau == 0:
            continue
        t, y, n = mean_curve([d.gold[model][i].nll_tau[tau] for i in idx], min(s.min_items, idx.size))
        ft = fit_curve(t, y, n)
        rows.append(
            {**base, "kind": "teacher_forced_at_tau", "tau": tau, "E": ft.E, "A": ft.A, "alpha": ft.alpha,
             "rmse": ft.rmse, "positions": ft.positions, "regime": regime(ft.E, ft.alpha, s.e_cut),
             "alpha_over_tau": native["alpha"] / tau}
        )  # fmt: skip
    return rows


def predictions_table(d: FamilyData, fits: pd.DataFrame, s: DynamicsSettings) -> pd.DataFrame:
    native = fits[fits["kind"] == "native"].set_index(["model", "group"])
    rows = []
    for model, stats in d.gold.items():
        item_fits = [_safe_fit(np.arange(1, len(st.nll) + 1), st.nll) for st in stats]
        for i, st in enumerate(stats):
            T = len(st.token_ids)
            g = native.loc[(model, "leaked" if d.leaked[i] else "unleaked")]
            f = item_fits[i]
            for tau in s.temperatures:
                obs = d.observed[model][tau]
                rows.append(
                    {"family": d.family, "model": model, "item": d.items[i], "leaked": bool(d.leaked[i]),
                     "tau": tau, "T": T, "p_group": float(survival_at(g["E"], g["A"], g["alpha"], T, tau)),
                     "p_item": float(survival_at(f.E, f.A, f.alpha, T, tau)) if f else np.nan,
                     "p_tf": float(np.exp(-np.sum(st.nll_tau[tau]))),
                     "item_E": f.E if f else np.nan, "item_A": f.A if f else np.nan,
                     "item_alpha": f.alpha if f else np.nan,
                     "solve": float(obs.solve[i]), "verbatim": float(obs.verbatim[i])}
                )  # fmt: skip
    return pd.DataFrame(rows)


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import spearmanr

    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3 or np.ptp(a[ok]) == 0 or np.ptp(b[ok]) == 0:
        return np.nan
    return float(spearmanr(a[ok], b[ok]).statistic)


def accuracy_table(pred: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (family, model, tau), df in pred.groupby(["family", "model", "tau"], sort=True):
        for subset, part in (("all", df), ("leaked", df[df["leaked"]]), ("unleaked", df[~df["leaked"]])):
            for p in PREDICTORS:
                for target in TARGETS:
                    a, b = part[p].to_numpy(float), part[target].to_numpy(float)
                    ok = np.isfinite(a) & np.isfinite(b)
                    rows.append(
                        {"family": family, "model": model, "tau": tau, "subset": subset, "predictor": p,
                         "target": target, "n": int(ok.sum()),
                         "mean_pred": float(a[ok].mean()) if ok.any() else np.nan,
                         "mean_obs": float(b[ok].mean()) if ok.any() else np.nan,
                         "mae": float(np.abs(a[ok] - b[ok]).mean()) if ok.any() else np.nan,
                         "spearman": _spearman(a, b)}
                    )  # fmt: skip
    return pd.DataFrame(rows)


def gains_frame(d: FamilyData, s: DynamicsSettings, rng: np.random.Generator) -> pd.DataFrame:
    r_co = {t: d.observed["M_co"][t].solve for t in s.temperatures}
    r_cl = {t: d.observed["M_cl"][t].solve for t in s.temperatures}
    rows = gain_table(r_co, r_cl, d.leaked, n_boot=s.n_boot_gain, rng=rng)
    return pd.DataFrame([{"family": d.family, **r} for r in rows])


def analyse(d: FamilyData, s: DynamicsSettings) -> Tables:
    rng = np.random.default_rng(s.seed)
    fits = fits_table(d, s, rng)
    pred = predictions_table(d, fits, s)
    tables = Tables(positions_table(d), fits, pred, accuracy_table(pred), gains_frame(d, s, rng))
    if d.replicas is not None:
        tables.replicas = replica_table(d, d.replicas, s, rng)
    return tables
