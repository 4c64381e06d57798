"""Read what a sweep logged to MLflow back into typed records (:mod:`railsweep.results.records`).

Steps of :func:`read_sweep`, the one reader of sweep runs (publish step, notebook, scripts):
1. find the parent run (given, else the newest FINISHED sweep of the experiment, else the newest sweep);
2. read its ``sweep_spec.json`` (the resolved spec and every cell of the grid);
3. find, per cell id, the newest FINISHED child run in the experiment (any parent: a resumed sweep finds cells
   finished under an earlier parent);
4. build one :class:`CellRecord` per cell: status, run id, the scores its trial logged, and loaders that fetch
   its Parquet files on first use.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from railsweep.analysis.scoring import METRICS, join_constants, unflatten_scores
from railsweep.detection.output import FILENAME
from railsweep.detection.output import read_detections as read_table
from railsweep.dynamics.output import DYNAMICS_DIR
from railsweep.errors import ConfigError, DataError
from railsweep.results.io import read_cell, read_responses
from railsweep.results.records import FINISHED, MISSING, CellRecord, SweepRecord
from railsweep.sweep.tracking.tracker import (
    DETECTION_DIR,
    RESULTS_DIR,
    SPEC_ARTIFACT,
    TAG_CLEAN_RUN,
    TAG_KIND,
    TAG_QUESTIONS_FILE,
    TAG_RESPONSES_FILE,
    Tracker,
    check_tracking_uri,
    retry,
)

SCORE_COUNTS = ("n_questions", "n_strata", "B", "n_boot", "alpha", "seed", "m")
DEMO_URI = "http://127.0.0.1:5000"  # the server `railsweep demo` starts (or reuses)


def connect(tracking_uri: str | None = None) -> Tracker:
    """A checked :class:`Tracker` for ``tracking_uri``, else ``$MLFLOW_TRACKING_URI``, else the demo's."""
    # one progress bar per downloaded Parquet would bury a notebook's outputs
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    try:
        check_tracking_uri(uri or DEMO_URI)
    except ConfigError as e:
        if uri:
            raise
        raise ConfigError(f"no MLflow server at {DEMO_URI}, the demo's (run `railsweep demo`), and none "
                          "named: pass a tracking URI or set MLFLOW_TRACKING_URI") from e  # fmt: skip
    return Tracker(uri or DEMO_URI)


def _experiment_ids(tracker: Tracker, experiment: str | None) -> list[str]:
    client = tracker.client
    if experiment is None:
        return [e.experiment_id for e in retry(lambda: client.search_experiments(), "list experiments")]
    exp = retry(lambda: client.get_experiment_by_name(experiment), f"get experiment {experiment!r}")
    if exp is None and experiment.isdigit():
        exp = retry(lambda: client.get_experiment(experiment), f"get experiment {experiment}")
    if exp is None:
        raise DataError(f"no MLflow experiment named {experiment!r} at {tracker.uri}")
    return [exp.experiment_id]


def _sweep_runs(tracker: Tracker, experiment: str | None) -> list[Any]:
    ids = _experiment_ids(tracker, experiment)
    return _newest(tracker, ids, "sweep", 1000, "search sweep runs") if ids else []


def _newest(tracker: Tracker, ids: list[str], kind: str, n: int, what: str) -> list[Any]:
    """The newest ``n`` runs of ``kind`` (``railsweep.kind``) in the experiments ``ids``."""
    return list(retry(lambda: tracker.client.search_runs(ids, filter_string=f"tags.`{TAG_KIND}` = '{kind}'",
                      max_results=n, order_by=["attributes.start_time DESC"]), what))  # fmt: skip


def list_sweeps(tracker: Tracker, experiment: str | None = None) -> pd.DataFrame:
    """One row per sweep (parent run), newest first (``experiment`` None = every experiment)."""
    rows = [(r.info.run_id, r.info.experiment_id, r.info.run_name, r.info.status,
             pd.to_datetime(r.info.start_time, unit="ms", utc=True), r.data.params.get("preset"),
             r.data.params.get("table"), r.data.params.get("n_cells"))
            for r in _sweep_runs(tracker, experiment)]  # fmt: skip
    cols = ["run_id", "experiment_id", "run_name", "status", "started", "preset", "table", "n_cells"]
    return pd.DataFrame(rows, columns=cols)


def logged_scores(metrics: Mapping[str, float], params: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The ``score_pair`` dict a trial logged (scores as metrics, the design as ``score.<name>`` params); None
    when it logged none. A metric the tracker dropped comes back NaN."""
    metrics = join_constants(metrics, params or {})
    if "n_boot" not in metrics:
        return None
    flat: dict[str, float] = {}
    for name in METRICS:
        for key in (name, f"{name}_ci_low", f"{name}_ci_high", f"{name}_floor", f"{name}_check"):
            flat[key] = metrics.get(key, math.nan)
        # only the metrics that have them
        flat.update({k: metrics[k] for k in (f"{name}_corrected", f"{name}_nonzero", f"{name}_sharp_min")
                     if k in metrics})
    # the weight concentration, where logged (else recomputed at publish time: railsweep.analysis.report)
    flat.update({k: v for k, v in metrics.items() if k.startswith("sappg_")})
    flat.update({k: metrics[k] for k in SCORE_COUNTS if k in metrics})
    return unflatten_scores(flat)


def download_questions(tracker: Tracker, run: Any, dst: str | Path) -> pd.DataFrame:
    """The per-question table of a cell run (``results/<cell_id>.parquet``), schema-checked."""
    path = tracker.download(run.info.run_id, f"{RESULTS_DIR}/{run.data.tags[TAG_QUESTIONS_FILE]}", dst)
    return read_cell(path)[1]


def download_responses(tracker: Tracker, run: Any, dst: str | Path) -> pd.DataFrame | None:
    """The responses table of a cell run; None when the run names none."""
    if not (name := run.data.tags.get(TAG_RESPONSES_FILE)):
        return None
    return read_responses(tracker.download(run.info.run_id, f"{RESULTS_DIR}/{name}", dst))


def cell_files(tracker: Tracker, cell_ids: Iterable[str], dst: str | Path) -> dict[str, dict[str, Path]]:
    """``{cell_id: {"questions": path, "responses": path}}`` of each cell's newest FINISHED run, if any."""
    kinds = (("questions", TAG_QUESTIONS_FILE), ("responses", TAG_RESPONSES_FILE))
    return {cid: {kind: tracker.download(run.info.run_id, f"{RESULTS_DIR}/{run.data.tags[tag]}",
                                         Path(dst) / cid) for kind, tag in kinds}
            for cid, run in tracker.finished_cells(cell_ids).items()}  # fmt: skip


def cell_tables(tracking_uri: str, experiment_id: str, cell_ids: Iterable[str],
                dst: str | Path) -> dict[str, tuple[pd.DataFrame, pd.DataFrame | None]]:  # fmt: skip
    """``{cell_id: (per-question table, responses table or None)}`` of each cell's newest FINISHED run (the
    dynamics step's reader). Takes the URI, not a :class:`Tracker`, so that it travels to a Ray task."""
    tracker = Tracker(tracking_uri, experiment_id)
    return {cid: (download_questions(tracker, run, Path(dst) / cid),
                  download_responses(tracker, run, Path(dst) / f"{cid}-responses"))
            for cid, run in tracker.finished_cells(cell_ids).items()}  # fmt: skip


def read_detections(tracker: Tracker, parent_run_id: str, dst: str | Path) -> pd.DataFrame | None:
    """The per-item detection table on a sweep's parent run (schema-checked); None when it has none."""
    listed = retry(lambda: tracker.client.list_artifacts(parent_run_id, DETECTION_DIR),
                   "list detection artifacts")  # fmt: skip
    if f"{DETECTION_DIR}/{FILENAME}" not in {a.path for a in listed}:
        return None
    return read_table(tracker.download(parent_run_id, f"{DETECTION_DIR}/{FILENAME}", dst))


def _parent(tracker: Tracker, experiment: str | None, parent_run_id: str | None) -> Any:
    if parent_run_id is not None:
        try:
            return retry(lambda: tracker.client.get_run(parent_run_id), f"get run {parent_run_id}")
        except Exception as e:
            raise DataError(f"parent run {parent_run_id!r} not found at {tracker.uri}: {e}") from e
    if not (runs := _sweep_runs(tracker, experiment)):
        where = f"experiment {experiment!r}" if experiment else "any experiment"
        raise DataError(f"no railsweep sweep (parent run) in {where} at {tracker.uri}")
    finished = [r for r in runs if r.info.status == FINISHED]
    return (finished or runs)[0]


def _cell_record(tracker: Tracker, meta: Mapping[str, Any], run: Any | None, dst: Path) -> CellRecord:
    cid = meta["params"]["cell_id"]
    base = dict(cell_id=cid, config=meta["config"], label=meta["label"], clean_id=meta.get("clean_id"),
                params=meta["params"])  # fmt: skip
    if run is None:
        return CellRecord(**base, status=MISSING)
    return CellRecord(**base, status=FINISHED, run_id=run.info.run_id,
                      scores=logged_scores(run.data.metrics, run.data.params),
                      scored_against=run.data.tags.get(TAG_CLEAN_RUN),
                      load_questions=lambda: download_questions(tracker, run, dst / cid),
                      load_responses=lambda: download_responses(tracker, run,
                                                                dst / f"{cid}-responses"))  # fmt: skip


def read_sweep(tracker: Tracker, experiment: str | None = None, parent_run_id: str | None = None, *,
               download_dir: str | Path | None = None) -> SweepRecord:  # fmt: skip
    """Steps 1–4 for one sweep (default: the newest in ``experiment``, or in any); Parquet files fetched later
    go under ``download_dir`` (default: a new temporary directory)."""
    parent = _parent(tracker, experiment, parent_run_id)
    tracker.experiment_id = parent.info.experiment_id
    dst = Path(download_dir) if download_dir else Path(tempfile.mkdtemp(prefix="railsweep-records-"))
    try:
        spec_path = tracker.download(parent.info.run_id, SPEC_ARTIFACT, dst / parent.info.run_id)
    except Exception as e:
        raise DataError(f"run {parent.info.run_id} has no {SPEC_ARTIFACT} artifact: not a railsweep sweep "
                        f"parent run ({e})") from e  # fmt: skip
    blob = json.loads(Path(spec_path).read_text())
    metas = blob["cells"]
    runs = tracker.finished_cells(m["params"]["cell_id"] for m in metas)
    cells = tuple(_cell_record(tracker, m, runs.get(m["params"]["cell_id"]), dst) for m in metas)
    return SweepRecord(parent.info.experiment_id, parent.info.run_id, blob["spec"], cells)


def load_figure1(tracker: Tracker, out_dir: str | Path, experiment: str = "railsweep-figure1") -> dict | None:
    """The newest ``railsweep figure1 --tracking-uri`` run: {"run_id", "summary", "png"}; None if there is none."""
    exp = retry(lambda: tracker.client.get_experiment_by_name(experiment), f"get experiment {experiment!r}")
    if exp is None:
        return None
    if not (runs := _newest(tracker, [exp.experiment_id], "figure1", 1, "search figure-1 runs")):
        return None
    run = runs[0]
    out = Path(out_dir) / f"figure1-{run.info.run_id}"
    out.mkdir(parents=True, exist_ok=True)
    png = tracker.download(run.info.run_id, "figure1.png", out)
    summary = json.loads(tracker.download(run.info.run_id, "figure1.json", out).read_text())
    return {"run_id": run.info.run_id, "summary": summary, "png": png}


def read_dynamics(tracker: Tracker, parent_run_id: str,
                  download_dir: str | Path | None = None) -> dict[str, pd.DataFrame]:  # fmt: skip
    """The dynamics tables on a sweep's parent run by name, all groups' rows (``{}`` without temperatures)."""
    files = retry(lambda: tracker.client.list_artifacts(parent_run_id, DYNAMICS_DIR),
                  "list dynamics artifacts")  # fmt: skip
    dst = Path(download_dir) if download_dir else Path(tempfile.mkdtemp(prefix="railsweep-dynamics-"))
    return {Path(f.path).stem: pd.read_parquet(tracker.download(parent_run_id, f.path, dst / parent_run_id))
            for f in files if f.path.endswith(".parquet")}  # fmt: skip
