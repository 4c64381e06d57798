"""Writing a dynamics run: Parquet tables, PNG figures and ``summary.json``, each to a temporary name first.

Files under the output directory: ``positions``, ``fits``, ``predictions``, ``accuracy``, ``gains``
``.parquet`` (every family's rows, a ``family`` column), in a replica world ``replicas.parquet`` and the
``memorisation_curve`` figure, ``<figure>_<family>.png`` and ``summary.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from railsweep.atomic import write_atomic
from railsweep.dynamics import plots
from railsweep.dynamics.analyse import Tables

TABLES = ("positions", "fits", "predictions", "accuracy", "gains")
DYNAMICS_DIR = "dynamics"  # where a sweep logs these files on its parent run (railsweep.sweep.tracking.reader reads them)


def _clean(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def family_summary(t: Tables) -> dict:
    """The headline figures of one family: fits with CIs and regimes, alpha/tau check, accuracy, gains."""
    nat = t.fits[t.fits["kind"] == "native"]
    ranged = ("E", "A", "alpha", "margin_slope", "greedy_gap_slope")
    fits = {f"{r['model']}/{r['group']}": {k: [r[k], r[f"{k}_lo"], r[f"{k}_hi"]] for k in ranged}
            | {"regime": r["regime"], "n_items": r["n_items"]}
            for r in nat.to_dict(orient="records")}  # fmt: skip
    tf = t.fits[t.fits["kind"] == "teacher_forced_at_tau"]
    alpha_tau = {f"{r.model}/{r.group}/tau={r.tau:g}": {"alpha_fit": r.alpha, "alpha_over_tau": r.alpha_over_tau}
                 for r in tf.itertuples()}  # fmt: skip
    acc = t.accuracy[t.accuracy["subset"] == "all"]
    accuracy = {
        f"{r.model}/tau={r.tau:g}/{r.predictor}->{r.target}": {
            "mae": r.mae, "spearman": r.spearman, "mean_pred": r.mean_pred, "mean_obs": r.mean_obs
        }
        for r in acc.itertuples()
    }
    gains = t.gains.drop(columns=["family"]).to_dict(orient="records")
    out = {"fits": fits, "alpha_tau": alpha_tau, "accuracy": accuracy, "gains": gains}
    if t.replicas is not None:
        out["replicas"] = t.replicas.drop(columns=["family"]).to_dict(orient="records")
    return _clean(out)


def write_run(out: Path, tables: dict[str, Tables], summary: dict) -> list[Path]:
    """Write every table, figure and the summary under ``out``; the paths written."""
    out = Path(out)
    written = []
    for name in TABLES + ("replicas",):
        frames = [getattr(t, name) for t in tables.values() if getattr(t, name) is not None]
        if not frames:  # replicas: only a replica world has them
            continue
        df = pd.concat(frames, ignore_index=True)
        path = out / f"{name}.parquet"
        written.append(write_atomic(path, lambda tmp, df=df: df.to_parquet(tmp, index=False)))
    import matplotlib.pyplot as plt

    for fam, t in tables.items():
        figures = {
            "nll_by_position": plots.nll_by_position(t.positions, t.fits), "logit_gaps": plots.logit_gaps(t.positions),
            "calibration": plots.calibration(t.predictions, "p_group", "solve"),
            "calibration_verbatim": plots.calibration(t.predictions, "p_tf", "verbatim"),
            "error_by_tau": plots.error_by_tau(t.accuracy, "solve"), "gain_vs_tau": plots.gain_vs_tau(t.gains),
        }  # fmt: skip
        if t.replicas is not None:
            figures["memorisation_curve"] = plots.memorisation_curve(t.replicas)
        for name, fig in figures.items():
            png = out / f"{name}_{fam}.png"
            written.append(write_atomic(png, lambda tmp, f=fig: f.savefig(tmp, format="png", dpi=110)))
            plt.close(fig)
    body = json.dumps(_clean(summary), indent=2, sort_keys=True)
    written.append(write_atomic(out / "summary.json", lambda tmp: tmp.write_text(body, encoding="utf-8")))
    return written
