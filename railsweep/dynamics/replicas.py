"""The memorisation curve of a pretraining-replica world: everything read against duplication count.

In a replica world (``WorldConfig.replicas``) each test item went ``c`` times (e.g. 0, 1, 4, 16, 64) into
the base model's pretraining. Per model (``base`` when read; M_cl = base + clean adapter, which saw no
test item itself; M_co = M_cl + the leaking adapter) and count c, :func:`replica_table` gives:
- ``solve_tau_<tau>`` (+ ``_lo``/``_hi``): mean solve probability at each tau, bootstrap CI over items;
- ``verbatim_tau_<tau>``: mean share of samples that reproduce the gold chain of thought;
- ``nll``: mean per-token teacher-forced NLL of the gold chain of thought (nats/token);
- ``E``, ``A``, ``alpha`` (+ CIs) and ``regime``: the fit of the group's mean NLL curve
  (:func:`railsweep.dynamics.powerlaw.fit_group`), NaN where too few items reach a position;
- ``auc_vs_0`` (+ CI): how well the loss probe (minus the mean gold NLL) tells this group from the
  never-inserted one (:mod:`railsweep.metrics.auc`); NaN for count 0 itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from railsweep.dynamics.powerlaw import PARAMS, fit_group
from railsweep.dynamics.regimes import regime
from railsweep.errors import ConfigError
from railsweep.metrics.auc import auc_ci, roc_auc
from railsweep.metrics.bootstrap import percentile_ci


def _mean_ci(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> tuple[float, float, float]:
    draws = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    return float(x.mean()), *percentile_ci(draws)


def _fit(curves: list[np.ndarray], n_boot: int, min_items: int, rng: np.random.Generator) -> dict:
    try:
        return fit_group(curves, n_boot=n_boot, min_items=min_items, rng=rng).columns()
    except ConfigError:  # too few positions reached by enough items
        return {k: np.nan for p in PARAMS for k in (p, f"{p}_lo", f"{p}_hi")}


def replica_table(d, counts: np.ndarray, settings, rng: np.random.Generator) -> pd.DataFrame:
    """One row per model x replica count (ascending); ``counts``: (N,) copies of each item of ``d``."""
    counts = np.asarray(counts, dtype=int)
    if counts.shape != (len(d.items),):
        raise ConfigError(f"need one replica count per item ({len(d.items)}), got shape {counts.shape}")
    never = counts == 0
    rows = []
    for model in d.gold:
        mean_nll = np.array([float(np.mean(st.nll)) if len(st.nll) else np.nan for st in d.gold[model]])
        for c in np.unique(counts):
            idx = np.flatnonzero(counts == c)
            row = {"family": d.family, "model": model, "replicas": int(c), "n_items": int(idx.size)}
            for tau in sorted(d.observed[model]):
                obs = d.observed[model][tau]
                mean, lo, hi = _mean_ci(np.asarray(obs.solve, float)[idx], settings.n_boot_gain, rng)
                row |= {f"solve_tau_{tau:g}": mean, f"solve_tau_{tau:g}_lo": lo, f"solve_tau_{tau:g}_hi": hi}
                row[f"verbatim_tau_{tau:g}"] = float(np.mean(np.asarray(obs.verbatim, float)[idx]))
            row["nll"] = float(np.nanmean(mean_nll[idx]))
            row |= _fit([d.gold[model][i].nll for i in idx], settings.n_boot, settings.min_items, rng)
            row["regime"] = regime(row["E"], row["alpha"], settings.e_cut) if np.isfinite(row["E"]) else ""
            auc = lo = hi = np.nan
            if c != 0 and never.any():
                pair = (counts == c) | never
                score, label = -mean_nll[pair], counts[pair] == c
                auc = roc_auc(score, label)
                lo, hi = auc_ci(score, label, n_boot=settings.n_boot_gain, rng=rng)
            row |= {"auc_vs_0": auc, "auc_vs_0_lo": lo, "auc_vs_0_hi": hi}
            rows.append(row)
    return pd.DataFrame(rows)
