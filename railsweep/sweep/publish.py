"""Aggregation: finished cells in MLflow → Tables 1–4 and figures on the sweep's parent run.

Runs as a Ray task launched by the driver (:func:`aggregate_sweep`), reading
only from MLflow, so it can also be rerun later against any sweep.

Steps:
1. find the newest FINISHED run of every cell id (any parent: cells are content-addressed);
2. download the per-question Parquet of each (and the clean cells' responses);
3. score every mitigated cell against its clean reference (stratified-bootstrap CIs);
4. build Tables 1–4 (Markdown, CSV, HTML) and the figures (SA-PPG bars, S-Δ± per
   stratum, readout stability), log them under ``tables/`` and ``figures/`` of the parent run;
5. return the Markdown of each table (the driver prints Table 3).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from railsweep.sweep.tracking import RESULTS_DIR, TAG_RESPONSES_FILE, Tracker
from railsweep.sweep.trial import download_questions


def setting_name(family: str, domain: str | None) -> str:
    return f"{domain or 'all'} × {family}"


def score_cells(
    tracker: Tracker, cells: Sequence[dict[str, Any]], B: int, n_boot: int, seed: int, tmp: Path
) -> tuple[list[dict[str, Any]], dict[str, pd.DataFrame], dict[str, Any], list[str]]:
    """Steps 1–3: (scored mitigated cells, per-question frames by cell id, runs by id, missing ids)."""
    from railsweep.analysis.scoring import score_pair

    runs = tracker.finished_cells([_cid(c) for c in cells])
    missing = [_cid(c) for c in cells if _cid(c) not in runs]
    frames: dict[str, pd.DataFrame] = {}
    for c in cells:
        cid = _cid(c)
        if cid in runs:
            frames[cid] = download_questions(tracker, runs[cid], tmp / cid)
    scored = []
    for c in cells:
        cid, cfg = _cid(c), c["config"]
        if cfg["role"] != "mitigated" or cid not in frames or c["clean_id"] not in frames:
            continue
        scores = score_pair(frames[c["clean_id"]], frames[cid], B=B, n_boot=n_boot, seed=seed)
        scored.append({
            "cell_id": cid, "clean_id": c["clean_id"], "family": cfg["family"], "domain": cfg["domain"],
            "strategy": c["label"], "strategy_name": cfg["strategy"], "params": cfg["strategy_params"],
            "score": scores,
        })  # fmt: skip
    return scored, frames, runs, missing


def _cid(meta: dict[str, Any]) -> str:
    return meta["params"]["cell_id"]


def tidy(scored: Sequence[dict[str, Any]], metric: str = "sa_ppg") -> pd.DataFrame:
    rows = []
    for s in scored:
        v = s["score"][metric]
        rows.append({"setting": setting_name(s["family"], s["domain"]), "strategy": s["strategy"],
                     "value": v["value"], "ci_low": v["ci_low"], "ci_high": v["ci_high"]})  # fmt: skip
    return pd.DataFrame(rows, columns=["setting", "strategy", "value", "ci_low", "ci_high"])


def write_tables(scored: Sequence[dict[str, Any]], primary: Sequence[str], out_dir: Path) -> dict[str, str]:
    """Step 4a: each table that has data → ``tableN.{md,csv,html}``; returns ``{"tableN": markdown}``."""
    from railsweep.analysis import tables as T

    out: dict[str, str] = {}
    for name, table in T.paper_tables(scored, primary).items():
        T.write_table(table, out_dir, name)
        out[name] = T.to_markdown(table)
    return out


def write_figures(
    scored: Sequence[dict[str, Any]],
    frames: dict[str, pd.DataFrame],
    responses: dict[str, pd.DataFrame],
    primary: Sequence[str],
    B: int,
    out_dir: Path,
) -> list[Path]:
    """Step 4b: SA-PPG bars, S-Δ± per stratum (primary setting), readout stability of the clean cells."""
    from railsweep.analysis import plots

    paths = []
    if scored:
        paths.append(plots.sappg_bars(tidy(scored), out_dir / "sappg_bars.png"))
        prim = [s for s in scored if (s["family"], s["domain"]) == tuple(primary)]
        if prim:
            clean = frames[prim[0]["clean_id"]]
            paths.append(
                plots.stratum_deltas(clean, {s["strategy"]: frames[s["cell_id"]] for s in prim},
                                     out_dir / "stratum_deltas.png", B=B, title=setting_name(*primary))
            )  # fmt: skip
    curves = {}
    for label, df in responses.items():
        try:
            curves[label] = plots.stability_curve(df)
        except ValueError:
            continue
    if curves:
        paths.append(plots.readout_stability_plot(curves, out_dir / "readout_stability.png"))
    return paths


def aggregate_sweep(
    tracking_uri: str,
    experiment_id: str,
    parent_id: str,
    cells: Sequence[dict[str, Any]],
    B: int = 50,
    n_boot: int = 1000,
    seed: int = 0,
    primary: Sequence[str] = ("llama", "gsm8k"),
) -> dict[str, Any]:
    """Steps 1–5; returns ``{"markdown": {"tableN": md}, "missing": [cell ids], "n_scored": int}``."""
    tracker = Tracker(tracking_uri, experiment_id)
    with tempfile.TemporaryDirectory(prefix="railsweep-agg-") as tmp_s:
        tmp = Path(tmp_s)
        scored, frames, runs, missing = score_cells(tracker, cells, B, n_boot, seed, tmp / "dl")
        responses = {}
        from railsweep.results.io import read_responses

        for c in cells:
            cid = _cid(c)
            if c["config"]["role"] == "clean" and cid in runs:
                name = runs[cid].data.tags.get(TAG_RESPONSES_FILE)
                if name:
                    p = tracker.download(
                        runs[cid].info.run_id, f"{RESULTS_DIR}/{name}", tmp / "dl" / f"{cid}-r"
                    )
                    responses[f"M_cl {c['config']['family']}"] = read_responses(p)
        (tmp / "tables").mkdir()
        (tmp / "figures").mkdir()
        markdown = write_tables(scored, primary, tmp / "tables")
        tidy_all = pd.DataFrame(
            [
                {
                    "cell_id": s["cell_id"],
                    "setting": setting_name(s["family"], s["domain"]),
                    "strategy": s["strategy"],
                    **{
                        f"{k}{'' if kk == 'value' else '_' + kk}": vv
                        for k, v in s["score"].items()
                        if isinstance(v, dict)
                        for kk, vv in v.items()
                    },
                }
                for s in scored
            ]  # fmt: skip
        )
        tidy_all.to_csv(tmp / "tables" / "all_cells.csv", index=False)
        write_figures(scored, frames, responses, primary, B, tmp / "figures")
        for sub in ("tables", "figures"):
            for f in sorted((tmp / sub).iterdir()):
                tracker.log_artifact(parent_id, f, sub)
    return {"markdown": markdown, "missing": missing, "n_scored": len(scored)}
