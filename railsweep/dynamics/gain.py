"""Contamination gain versus temperature, with paired bootstrap intervals, and the collapse factor.

Per tau, from per-item solve probabilities (N,) of the clean (``r_cl``) and contaminated (``r_co``) model:
- model gain: mean over leaked items of ``r_co - r_cl``;
- split gain: mean of ``r_co`` on leaked items minus its mean on unleaked items;
- collapse factor: ``gain(tau_ref) / gain(tau)``, tau_ref the coldest (greedy) tau; NaN where gain <= 0.
One stratified (leaked / unleaked) index matrix resamples items for every tau at once, so the collapse
factor's intervals are paired across temperatures. Pure numpy.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from railsweep.errors import ConfigError
from railsweep.metrics.bootstrap import percentile_ci, stratified_indices


def _gains(r_co: np.ndarray, r_cl: np.ndarray, leaked: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, ...]:
    """Model and split gains for index arrays idx (..., N) (leaked columns draw leaked items)."""
    lk = leaked[idx]
    n_lk = lk.sum(axis=-1)
    n_un = (~lk).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        model = np.where(lk, r_co[idx] - r_cl[idx], 0.0).sum(axis=-1) / n_lk
        split = (np.where(lk, r_co[idx], 0.0).sum(axis=-1) / n_lk
                 - np.where(~lk, r_co[idx], 0.0).sum(axis=-1) / n_un)  # fmt: skip
    return model, split


def _ratio(a, b):
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1.0), np.nan)


def gain_table(
    r_co: Mapping[float, np.ndarray], r_cl: Mapping[float, np.ndarray], leaked, *, n_boot: int = 1000,
    alpha: float = 0.05, rng: np.random.Generator,
) -> list[dict]:  # fmt: skip
    """One row per tau: gains and collapse factors with percentile CIs (see the module docstring)."""
    leaked = np.asarray(leaked, dtype=bool)
    taus = sorted(r_co)
    if not taus or sorted(r_cl) != taus:
        raise ConfigError(f"r_co and r_cl need the same temperatures, got {sorted(r_co)} and {sorted(r_cl)}")
    if not leaked.any() or leaked.all():
        raise ConfigError("gains need both leaked and unleaked items")
    idx = stratified_indices(leaked.astype(int), n_boot, rng)
    full = np.arange(leaked.size)
    point = {t: _gains(np.asarray(r_co[t]), np.asarray(r_cl[t]), leaked, full) for t in taus}
    boot = {t: _gains(np.asarray(r_co[t]), np.asarray(r_cl[t]), leaked, idx) for t in taus}
    ref = taus[0]
    rows = []
    for t in taus:
        row = {"tau": float(t), "tau_ref": float(ref)}
        for k, name in enumerate(("model_gain", "split_gain")):
            row[name] = float(point[t][k])
            row[f"{name}_lo"], row[f"{name}_hi"] = percentile_ci(boot[t][k], alpha)
            row[f"{name}_collapse"] = float(_ratio(point[ref][k], point[t][k]))
            ratios = _ratio(boot[ref][k], boot[t][k])
            ratios = ratios[np.isfinite(ratios)]
            lo, hi = percentile_ci(ratios, alpha) if ratios.size else (np.nan, np.nan)
            row[f"{name}_collapse_lo"], row[f"{name}_collapse_hi"] = lo, hi
        rows.append(row)
    return rows
