"""Library side of ``notebooks/analysis.ipynb``: read a finished sweep back from MLflow and rebuild the paper's
Tables 1–4 and figures, so no analysis lives only in a notebook cell (and every step is tested).

A session, step by step:
1. :func:`connect` to the MLflow HTTP server (argument, else ``$MLFLOW_TRACKING_URI``; /health is checked);
2. :func:`list_sweeps` shows the sweeps (parent runs); :func:`load_sweep` reads one: the parent run's
   ``sweep_spec.json`` (spec + every cell), then per cell the newest FINISHED child run with that cell id
   (cells are content-addressed, so a resumed sweep finds cells finished under an earlier parent) and its
   per-question Parquet (``results/<cell_id>.parquet``), plus the responses Parquet of the clean cells;
3. :func:`score_sweep` scores every mitigated cell against its clean reference (stratified bootstrap CIs);
4. :func:`paper_tables` builds Tables 1–4 (:class:`railsweep.analysis.tables.Table`);
5. :func:`figures` draws the per-question scatter (clean vs mitigated), S-Δ± per stratum, SA-PPG bars and
   readout stability (paper Fig. 2) with :mod:`railsweep.analysis.plots`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from railsweep.analysis.tables import MAIN_ROWS, paper_tables  # noqa: F401  (paper_tables: the notebook calls nb.paper_tables)
from railsweep.errors import ConfigError, DataError

SPEC_ARTIFACT = "sweep_spec.json"  # logged on the parent run by railsweep.sweep.driver
# Rows of Tables 1-3 (the paper's strategies at their main settings); Table 4 is the RailCap ablation.


def connect(tracking_uri: str | None = None):
    """A :class:`railsweep.sweep.tracking.Tracker` for ``tracking_uri`` or ``$MLFLOW_TRACKING_URI``."""
    from railsweep.sweep.tracking import Tracker, check_tracking_uri

    # one progress bar per downloaded Parquet would bury the notebook's outputs
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if not uri:
        raise ConfigError(
            "no MLflow tracking URI: pass one (e.g. http://127.0.0.1:5000) or set MLFLOW_TRACKING_URI"
        )
    check_tracking_uri(uri)
    return Tracker(uri)


def _experiment_ids(tracker, experiment: str | None) -> list[str]:
    from railsweep.sweep.tracking import retry

    client = tracker.client
    if experiment is None:
        return [e.experiment_id for e in retry(lambda: client.search_experiments(), "list experiments")]
    exp = retry(lambda: client.get_experiment_by_name(experiment), f"get experiment {experiment!r}")
    if exp is None and experiment.isdigit():
        exp = retry(lambda: client.get_experiment(experiment), f"get experiment {experiment}")
    if exp is None:
        raise DataError(f"no MLflow experiment named {experiment!r} at {tracker.uri}")
    return [exp.experiment_id]


def _sweep_runs(tracker, experiment: str | None) -> list[Any]:
    from railsweep.sweep.tracking import TAG_KIND, retry

    ids = _experiment_ids(tracker, experiment)
    if not ids:
        return []
    return list(
        retry(
            lambda: tracker.client.search_runs(
                ids, filter_string=f"tags.`{TAG_KIND}` = 'sweep'", max_results=1000,
                order_by=["attributes.start_time DESC"],
            ),
            "search sweep runs",
        )
    )  # fmt: skip


def list_sweeps(tracker, experiment: str | None = None) -> pd.DataFrame:
    """One row per sweep (parent run), newest first: run_id, experiment_id, run_name, status, started, preset,
    table, n_cells (``experiment`` None = every experiment)."""
    rows = []
    for run in _sweep_runs(tracker, experiment):
        p = run.data.params
        rows.append({
            "run_id": run.info.run_id, "experiment_id": run.info.experiment_id, "run_name": run.info.run_name,
            "status": run.info.status, "started": pd.to_datetime(run.info.start_time, unit="ms", utc=True),
            "preset": p.get("preset"), "table": p.get("table"), "n_cells": p.get("n_cells"),
        })  # fmt: skip
    cols = ["run_id", "experiment_id", "run_name", "status", "started", "preset", "table", "n_cells"]
    return pd.DataFrame(rows, columns=cols)


@dataclass
class Sweep:
    """A sweep read back from MLflow. ``cells`` are the driver's cell records (``config``, ``clean_id``,
    ``params``, ``label``); ``frames``/``responses`` are keyed by cell id; ``missing`` lists cell ids with no
    FINISHED run (failed or not run yet): they are left out of the tables, never counted as zero."""

    tracker: Any
    experiment_id: str
    parent_run_id: str
    spec: dict[str, Any]
    cells: list[dict[str, Any]]
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)
    responses: dict[str, pd.DataFrame] = field(default_factory=dict)
    runs: dict[str, Any] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)

    @property
    def primary(self) -> tuple[str, str]:
        """(family, domain) of Tables 1, 2 and 4: the spec's ``primary``, else its first family and domain."""
        prim = self.spec.get("primary")
        if prim:
            return (
                (str(prim[0]), str(prim[1]))
                if isinstance(prim, (list, tuple))
                else (prim["family"], prim["domain"])
            )
        return (self.spec["families"][0]["name"], self.spec["domains"][0])

    @property
    def scoring(self) -> dict[str, Any]:
        return {"B": 50, "n_boot": 1000, "seed": 0, **(self.spec.get("scoring") or {})}


def load_sweep(
    tracker,
    experiment: str | None = None,
    parent_run_id: str | None = None,
    *,
    download_dir: str | Path | None = None,
    with_responses: bool = True,
) -> Sweep:
    """Read a sweep (default: the newest parent run in ``experiment``, or in any experiment) back from MLflow."""
    from railsweep.results.io import read_responses
    from railsweep.sweep.tracking import RESULTS_DIR, TAG_RESPONSES_FILE, retry
    from railsweep.sweep.trial import download_questions

    if parent_run_id is None:
        runs = _sweep_runs(tracker, experiment)
        if not runs:
            where = f"experiment {experiment!r}" if experiment else "any experiment"
            raise DataError(f"no railsweep sweep (parent run) in {where} at {tracker.uri}")
        finished = [r for r in runs if r.info.status == "FINISHED"]
        parent = (finished or runs)[0]
    else:
        try:
            parent = retry(lambda: tracker.client.get_run(parent_run_id), f"get run {parent_run_id}")
        except Exception as e:
            raise DataError(f"parent run {parent_run_id!r} not found at {tracker.uri}: {e}") from e
    tracker.experiment_id = parent.info.experiment_id
    dst = Path(download_dir) if download_dir else Path(tempfile.mkdtemp(prefix="railsweep-nb-"))
    try:
        spec_path = tracker.download(parent.info.run_id, SPEC_ARTIFACT, dst / parent.info.run_id)
    except Exception as e:
        raise DataError(
            f"run {parent.info.run_id} has no {SPEC_ARTIFACT} artifact: not a railsweep sweep parent run ({e})"
        ) from e
    blob = json.loads(Path(spec_path).read_text())
    sweep = Sweep(tracker, parent.info.experiment_id, parent.info.run_id, blob["spec"], blob["cells"])
    ids = [c["params"]["cell_id"] for c in sweep.cells]
    sweep.runs = tracker.finished_cells(ids)
    sweep.missing = [cid for cid in ids if cid not in sweep.runs]
    for c in sweep.cells:
        cid = c["params"]["cell_id"]
        if cid not in sweep.runs:
            continue
        run = sweep.runs[cid]
        sweep.frames[cid] = download_questions(tracker, run, dst / cid)
        name = run.data.tags.get(TAG_RESPONSES_FILE)
        if with_responses and name and c["config"]["role"] == "clean":
            path = tracker.download(run.info.run_id, f"{RESULTS_DIR}/{name}", dst / f"{cid}-responses")
            sweep.responses[cid] = read_responses(path)
    return sweep


def cells_frame(sweep: Sweep) -> pd.DataFrame:
    """Overview, one row per cell: id, role, setting, label, status and the mean solve probability."""
    rows = []
    for c in sweep.cells:
        cid, cfg = c["params"]["cell_id"], c["config"]
        df = sweep.frames.get(cid)
        rows.append({
            "cell_id": cid, "role": cfg["role"], "family": cfg["family"], "domain": cfg.get("domain"),
            "strategy": c["label"], "clean_id": c.get("clean_id"),
            "status": "FINISHED" if cid in sweep.runs else "missing",
            "n_questions": None if df is None else len(df),
            "mean_solve_prob": None if df is None else float(df["solve_prob"].mean()),
        })  # fmt: skip
    return pd.DataFrame(rows)


def score_sweep(sweep: Sweep, *, B: int | None = None, n_boot: int | None = None, seed: int | None = None):
    """Every mitigated cell with both readouts present, scored against its clean reference (the sweep's own
    scoring settings unless overridden). Returns the cell dicts :mod:`railsweep.analysis.tables` takes."""
    from railsweep.analysis.scoring import score_pair

    s = sweep.scoring
    B, n_boot, seed = B or s["B"], n_boot or s["n_boot"], s["seed"] if seed is None else seed
    scored = []
    for c in sweep.cells:
        cid, cfg = c["params"]["cell_id"], c["config"]
        if cfg["role"] != "mitigated" or cid not in sweep.frames or c.get("clean_id") not in sweep.frames:
            continue
        scored.append({
            "cell_id": cid, "clean_id": c["clean_id"], "family": cfg["family"], "domain": cfg["domain"],
            "strategy": c["label"], "strategy_name": cfg["strategy"],
            "score": score_pair(sweep.frames[c["clean_id"]], sweep.frames[cid], B=B, n_boot=n_boot, seed=seed),
        })  # fmt: skip
    return scored


def setting_label(family: str, domain: str | None) -> str:
    return f"{domain or 'all'} × {family}"


def figures(sweep: Sweep, scored: Sequence[Mapping[str, Any]], out_dir: str | Path) -> dict[str, Path]:
    """The notebook's figures as PNG files, keyed by name (a figure without data is left out):
    ``scatter`` (per question, clean vs mitigated, primary setting: Identity and RailCap n=4 cap side by side
    where present), ``stratum_deltas`` (S-Δ+/S-Δ− per stratum, primary setting), ``sappg_bars`` (Table 3
    as bars) and ``readout_stability`` (paper Fig. 2, from the clean cells' samples)."""
    from railsweep.analysis import plots

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    prim = [s for s in scored if (s["family"], s["domain"]) == tuple(sweep.primary)]
    for s in prim:
        if s["strategy"] in ("Identity", "RailCap n=4 cap"):
            key = "scatter_" + s["strategy"].split()[0].lower()
            paths[key] = plots.scatter_clean_vs_mitigated(
                sweep.frames[s["clean_id"]], sweep.frames[s["cell_id"]], out / f"{key}.png",
                title=f"{setting_label(*sweep.primary)}: {s['strategy']}",
            )  # fmt: skip
    if prim:
        by_label = {s["strategy"]: sweep.frames[s["cell_id"]] for s in prim if s["strategy"] in MAIN_ROWS}
        if by_label:
            paths["stratum_deltas"] = plots.stratum_deltas(
                sweep.frames[prim[0]["clean_id"]], by_label, out / "stratum_deltas.png", B=sweep.scoring["B"],
                title=setting_label(*sweep.primary),
            )  # fmt: skip
    main = [s for s in scored if s["strategy"] in MAIN_ROWS]
    if main:
        paths["sappg_bars"] = plots.sappg_bars(sappg_frame(main), out / "sappg_bars.png")
    curves = {}
    for c in sweep.cells:
        cid = c["params"]["cell_id"]
        if cid in sweep.responses:
            try:
                curves[f"M_cl {c['config']['family']}"] = plots.stability_curve(sweep.responses[cid])
            except ValueError:  # too few samples per question for two batches
                continue
    if curves:
        paths["readout_stability"] = plots.readout_stability_plot(curves, out / "readout_stability.png")
    return paths


def sappg_frame(scored: Sequence[Mapping[str, Any]], metric: str = "sa_ppg") -> pd.DataFrame:
    """Long format ``setting, strategy, value, ci_low, ci_high`` of one metric (the bars' input)."""
    rows = [
        {"setting": setting_label(s["family"], s["domain"]), "strategy": s["strategy"],
         **{k: s["score"][metric][k] for k in ("value", "ci_low", "ci_high")}}
        for s in scored
    ]  # fmt: skip
    return pd.DataFrame(rows, columns=["setting", "strategy", "value", "ci_low", "ci_high"])


def gap_vs_sappg(scored: Sequence[Mapping[str, Any]], primary: Sequence[str]) -> pd.DataFrame:
    """For the reading guide: per strategy of the primary setting, G-AP next to A-PPG, G-APP and SA-PPG, and
    the cancellation share 1 − G-APP/A-PPG (how much of the per-question gap cancels in the average)."""
    rows = []
    for s in scored:
        if (s["family"], s["domain"]) != tuple(primary):
            continue
        sc = s["score"]
        a, g = sc["a_ppg"]["value"], sc["g_app"]["value"]
        rows.append({
            "strategy": s["strategy"], "G-AP": sc["g_ap"]["value"], "G-APP": g, "A-PPG": a,
            "SA-PPG": sc["sa_ppg"]["value"], "cancelled share": (1 - g / a) if a > 0 else float("nan"),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=["strategy", "G-AP", "G-APP", "A-PPG", "SA-PPG", "cancelled share"])


def load_figure1(tracker, out_dir: str | Path, experiment: str = "railsweep-figure1") -> dict | None:
    """The newest ``railsweep figure1 --tracking-uri`` run: {"run_id", "summary", "png"}; None if there is none."""
    from railsweep.sweep.tracking import TAG_KIND, retry

    exp = retry(lambda: tracker.client.get_experiment_by_name(experiment), f"get experiment {experiment!r}")
    if exp is None:
        return None
    runs = retry(
        lambda: tracker.client.search_runs(
            [exp.experiment_id], filter_string=f"tags.`{TAG_KIND}` = 'figure1'", max_results=1,
            order_by=["attributes.start_time DESC"],
        ),
        "search figure-1 runs",
    )  # fmt: skip
    if not runs:
        return None
    run = runs[0]
    out = Path(out_dir) / f"figure1-{run.info.run_id}"
    out.mkdir(parents=True, exist_ok=True)
    png = retry(
        lambda: tracker.client.download_artifacts(run.info.run_id, "figure1.png", str(out)),
        "download figure1.png",
    )
    summary = json.loads(
        Path(
            retry(
                lambda: tracker.client.download_artifacts(run.info.run_id, "figure1.json", str(out)),
                "download figure1.json",
            )
        ).read_text()
    )
    return {"run_id": run.info.run_id, "summary": summary, "png": Path(png)}
