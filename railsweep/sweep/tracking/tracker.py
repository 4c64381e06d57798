"""A thin MLflow layer for sweeps: one parent run per sweep, one child run per cell.

Not Ray's MLflow integration: it has no parent run, logs noise metrics, sends one request per metric and opens
new runs on restore (``ray-mlflow-notes.md`` §2). Every call here is retried with backoff, ending in one
:class:`TrackingError`. Cells are keyed by the ``railsweep.cell_id`` tag (never Tune's trial id), so a cell
FINISHED once is never recomputed, and a retried cell reuses its unfinished child run.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from railsweep.errors import ConfigError, RailsweepError
from railsweep.sweep.tracking.mlflow_view import EXPERIMENT_TAGS

T = TypeVar("T")

TAG_KIND = "railsweep.kind"  # "sweep" (parent) | "cell" (child)
TAG_CELL_ID = "railsweep.cell_id"
TAG_SWEEP_ID = "railsweep.sweep_id"
TAG_PARENT = "mlflow.parentRunId"
TAG_ROLE = "railsweep.role"
TAG_VALUE_LIMIT = 5000  # characters of a tag value the tracker keeps (MLflow's own limit is 8000)
TAG_QUESTIONS_FILE = "railsweep.questions_artifact"
TAG_RESPONSES_FILE = "railsweep.responses_artifact"
TAG_CLEAN_RUN = "railsweep.clean_run_id"  # the clean run a mitigated cell's logged scores compare against
TAG_ERROR = "railsweep.error"  # on a FAILED cell run: the exception that ended it
RESULTS_DIR = "results"
SPEC_ARTIFACT = "sweep_spec.json"  # on the parent run: the resolved spec and every cell of the grid
DETECTION_DIR = "detection"  # on the parent run: detections.parquet, truth.csv/.md, roc.png (sweep.run.detection)

os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
# MLflow's own urllib3 retries can stall a call for minutes; ours are bounded and explicit.
os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")


class TrackingError(RailsweepError):
    """The MLflow tracking server could not be reached or refused a request."""


def check_tracking_uri(uri: str, timeout: float = 5.0) -> None:
    """Fail fast (before any trial) unless ``uri`` is an HTTP MLflow server answering /health."""
    if not uri.startswith(("http://", "https://")):
        raise ConfigError(f"tracking URI {uri!r} is not an HTTP(S) MLflow server; sweeps need one "
                          "(sqlite/file stores are node-local), e.g. http://127.0.0.1:5000 started by "
                          "`railsweep demo` or `mlflow server`")  # fmt: skip
    try:
        with urllib.request.urlopen(uri.rstrip("/") + "/health", timeout=timeout) as r:
            if r.status != 200:
                raise ConfigError(f"tracking URI {uri!r}: /health answered HTTP {r.status}")
    except (urllib.error.URLError, OSError) as e:
        raise ConfigError(f"tracking URI {uri!r} is unreachable ({e}); start `mlflow server` or fix the "
                          "URI") from e


def retry(fn: Callable[[], T], what: str, *, attempts: int | None = None, base_delay: float = 1.0) -> T:
    """Call ``fn``; on a transport or server error wait 1, 2, 4, ... s and retry, then raise TrackingError."""
    from mlflow.exceptions import MlflowException

    n = attempts if attempts is not None else int(os.environ.get("RAILSWEEP_MLFLOW_ATTEMPTS", "6"))
    last: Exception | None = None
    for i in range(max(n, 1)):
        try:
            return fn()
        except (MlflowException, OSError) as e:  # requests' ConnectionError is an OSError
            refused = ("INVALID_PARAMETER_VALUE", "RESOURCE_DOES_NOT_EXIST")
            if isinstance(e, MlflowException) and e.error_code in refused:
                raise TrackingError(f"MLflow refused {what}: {e}") from e
            last = e
            if i + 1 < n:
                time.sleep(base_delay * 2**i)
    raise TrackingError(f"MLflow call {what} failed after {n} attempts: {last}") from last


class Tracker:
    """MLflow client bound to one tracking URI and experiment."""

    def __init__(self, uri: str, experiment_id: str | None = None):
        from mlflow import MlflowClient

        self.uri = uri
        self.client = MlflowClient(tracking_uri=uri)
        self.experiment_id = experiment_id

    def ensure_experiment(self, name: str) -> str:
        """Get or create the experiment (driver only: concurrent creation races)."""

        def go() -> str:
            if (exp := self.client.get_experiment_by_name(name)) is None:
                return self.client.create_experiment(name, tags=EXPERIMENT_TAGS)
            if exp.lifecycle_stage == "deleted":
                self.client.restore_experiment(exp.experiment_id)
            for key, value in EXPERIMENT_TAGS.items():
                if exp.tags.get(key) != value:
                    self.client.set_experiment_tag(exp.experiment_id, key, value)
            return exp.experiment_id

        self.experiment_id = retry(go, f"get/create experiment {name!r}")
        return self.experiment_id

    def parent_run(self, sweep_id: str, run_name: str, tags: Mapping[str, str], *,
                   resume: bool) -> tuple[str, bool]:  # fmt: skip
        """(run id, reused): with ``resume``, the newest unfinished parent of this sweep id is reused."""
        where = f"tags.`{TAG_SWEEP_ID}` = '{sweep_id}' and tags.`{TAG_KIND}` = 'sweep'" if resume else None
        return self._open_run(where, run_name, {**tags, TAG_SWEEP_ID: sweep_id, TAG_KIND: "sweep"},
                              "parent run")  # fmt: skip

    def _open_run(self, where: str | None, run_name: str, tags: dict[str, str],
                  what: str) -> tuple[str, bool]:  # fmt: skip
        """(run id, reused): the newest unfinished run matching ``where`` reopened, else a new one."""
        for run in self.search(where) if where else []:
            if run.info.status != "FINISHED":
                rid = run.info.run_id
                retry(lambda rid=rid: self.client.update_run(rid, status="RUNNING"), f"reopen {what}")
                if TAG_ERROR in run.data.tags:  # an earlier try's error does not describe this one
                    retry(lambda rid=rid: self.client.delete_tag(rid, TAG_ERROR), f"clear {what}'s error")
                return rid, True
        run = retry(lambda: self.client.create_run(self.experiment_id, run_name=run_name, tags=tags),
                    f"create {what}")  # fmt: skip
        return run.info.run_id, False

    def search(self, filter_string: str) -> list[Any]:
        out: list[Any] = []
        token = None
        while True:
            page = retry(lambda t=token: self.client.search_runs(
                [self.experiment_id], filter_string=filter_string, max_results=1000, page_token=t,
                order_by=["attributes.start_time DESC"]), f"search runs ({filter_string})")  # fmt: skip
            out.extend(page)
            if not (token := page.token):
                return out

    def finished_cells(self, cell_ids: Iterable[str] | None = None) -> dict[str, Any]:
        """``{cell_id: newest FINISHED run}`` in the experiment (any parent: cells are content-addressed). One
        cell id is filtered on the server; more are matched against every finished cell run in one search."""
        wanted = set(cell_ids) if cell_ids is not None else None
        where = f"tags.`{TAG_KIND}` = 'cell' and attributes.status = 'FINISHED'"
        if wanted is not None and len(wanted) == 1:
            where += f" and tags.`{TAG_CELL_ID}` = '{next(iter(wanted))}'"
        out: dict[str, Any] = {}
        for run in self.search(where):
            cid = run.data.tags.get(TAG_CELL_ID)
            if cid and (wanted is None or cid in wanted) and cid not in out:
                out[cid] = run
        return out

    def cell_runs(self, parent_id: str) -> list[Any]:
        return self.search(f"tags.`{TAG_PARENT}` = '{parent_id}'")

    def finished_run(self, cell_id: str) -> Any | None:
        """The newest FINISHED run of one cell, or None (:meth:`finished_cells` for one id)."""
        return self.finished_cells([cell_id]).get(cell_id)

    def start_cell_run(self, parent_id: str, cell_id: str, run_name: str, tags: Mapping[str, str]) -> str:
        """The cell's child run under ``parent_id``: an unfinished one is reused, else one is created."""
        where = f"tags.`{TAG_CELL_ID}` = '{cell_id}' and tags.`{TAG_PARENT}` = '{parent_id}'"
        tags = {**tags, TAG_PARENT: parent_id, TAG_CELL_ID: cell_id, TAG_KIND: "cell"}
        return self._open_run(where, run_name, tags, "cell run")[0]

    def log(self, run_id: str, *, params: Mapping[str, str] | None = None,
            metrics: Mapping[str, float] | None = None,
            tags: Mapping[str, str] | None = None) -> None:  # fmt: skip
        from mlflow.entities import Metric, Param, RunTag

        ts = int(time.time() * 1000)
        p = [Param(k, str(v)[:6000]) for k, v in (params or {}).items()]
        m = [Metric(k, float(v), ts, 0) for k, v in (metrics or {}).items() if v is not None and v == v]
        t = [RunTag(k, str(v)[:TAG_VALUE_LIMIT]) for k, v in (tags or {}).items()]
        batches = max(-(-len(m) // 1000), -(-len(p) // 100), -(-len(t) // 100), 1)  # log_batch's limits
        for k in range(batches):
            chunk = (m[k * 1000 : (k + 1) * 1000], p[k * 100 : (k + 1) * 100], t[k * 100 : (k + 1) * 100])
            retry(lambda c=chunk: self.client.log_batch(run_id, metrics=c[0], params=c[1], tags=c[2]),
                  f"log to run {run_id}")  # fmt: skip

    def log_artifact(self, run_id: str, path: str | Path, artifact_path: str | None = None) -> None:
        retry(lambda: self.client.log_artifact(run_id, str(path), artifact_path), f"upload {Path(path).name}")

    def download(self, run_id: str, artifact_path: str, dst: str | Path) -> Path:
        return Path(retry(lambda: self.client.download_artifacts(run_id, artifact_path, str(dst)),
                          f"download {artifact_path}"))  # fmt: skip

    def terminate(self, run_id: str, status: str) -> None:
        retry(lambda: self.client.set_terminated(run_id, status), f"set run {run_id} {status}")

    def stop_sweep(self, parent_id: str, status: str = "KILLED") -> None:
        """End the parent, then its cell runs still RUNNING, as ``status``, so none looks alive (``--resume``
        reopens them). The parent ends first: a trial that fails after it knows the sweep was stopped."""
        self.terminate(parent_id, status)
        for run in self.cell_runs(parent_id):
            if run.info.status == "RUNNING":
                self.terminate(run.info.run_id, status)

    def end_failed_cell(self, run_id: str, parent_id: str, error: str) -> None:
        """End a cell whose trial raised: FAILED with the error as a tag, or KILLED without one when its sweep
        was stopped (the parent no longer RUNNING), since a stopped sweep's engines die under their trials."""
        parent = retry(lambda: self.client.get_run(parent_id), f"read parent run {parent_id}")
        if parent.info.status != "RUNNING":
            self.terminate(run_id, "KILLED")
            return
        self.log(run_id, tags={TAG_ERROR: error[:4000]})
        self.terminate(run_id, "FAILED")


def provenance_tags(prov: Mapping[str, Any]) -> dict[str, str]:
    """Flatten :func:`railsweep.provenance.collect` into MLflow tags."""
    git = prov.get("git", {})
    return {"git.commit": str(git.get("commit")), "git.dirty": str(git.get("dirty")),
            "python": str(prov.get("python")),
            **{f"pkg.{name}": str(ver) for name, ver in (prov.get("packages") or {}).items()},
            **{f"data.sha256.{Path(path).name}": sha for path, sha in (prov.get("datasets") or {}).items()},
            **{f"world.{key}": str(value) for key, value in (prov.get("world") or {}).items()}}  # fmt: skip


def log_figure1(uri: str, summary: Mapping[str, Any], files: Sequence[Path],
                experiment: str = "railsweep-figure1") -> str:  # fmt: skip
    """One MLflow run with the Figure-1 summary as metrics and its files as artifacts; returns the run id."""
    tracker = Tracker(uri)
    tracker.ensure_experiment(experiment)
    rid, _ = tracker._open_run(None, "figure1", {TAG_KIND: "figure1"}, "figure-1 run")
    tracker.log(rid, metrics={k: v for k, v in summary.items() if isinstance(v, (int, float))})
    for f in files:
        tracker.log_artifact(rid, f)
    tracker.terminate(rid, "FINISHED")
    return rid
