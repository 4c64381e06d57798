"""The Tune trainable: one trial = one cell, a thin CPU client of the engine actors.

Steps of a trial:
1. skip when a FINISHED child run with this cell id exists (idempotent cells);
2. open (or reuse) the cell's child run under the sweep's parent run;
3. lease a free engine of the cell's family from the pool, have it evaluate the cell and give it back;
4. for a mitigated cell, wait for its clean reference in MLflow, score the pair (method.md §2, with CIs) and
   plot clean vs mitigated: the only time a pair is bootstrapped (publishing reuses these scores);
5. log params, metrics, provenance, artifacts; mark the run FINISHED (FAILED on error);
6. ``tune.report`` the headline numbers.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from railsweep.analysis.plots import scatter_clean_vs_mitigated
from railsweep.analysis.scoring import flatten_scores, score_pair, split_constants
from railsweep.engines.threads import apply_thread_budget
from railsweep.sweep.run.actors import ENGINE_NAMESPACE, write_files
from railsweep.sweep.tracking.mlflow_view import headline_first
from railsweep.sweep.tracking.reader import download_questions
from railsweep.sweep.tracking.tracker import (
    RESULTS_DIR,
    TAG_CLEAN_RUN,
    TAG_QUESTIONS_FILE,
    TAG_RESPONSES_FILE,
    TAG_ROLE,
    Tracker,
    TrackingError,
)


@dataclass
class SweepContext:
    """Everything a trial needs, shipped once through the object store (``tune.with_parameters``)."""

    tracking_uri: str
    experiment_id: str
    parent_id: str
    sweep_id: str
    cells: dict[str, dict[str, Any]]  # cell_id → {"config", "clean_id", "params", "label", "cell"} (trial_cells)
    pool: Any = None  # the engine pool actor (railsweep.sweep.plan.pool.EnginePool)
    board: Any = None
    B: int = 50
    n_boot: int = 1000
    score_seed: int = 0
    clean_wait_s: float = 1800.0
    run_tags: dict[str, str] = field(default_factory=dict)
    threads: int = 1  # the trial's thread budget (it scores and plots; the engines decode)


def cell_summary(df: Any) -> dict[str, float]:
    """Solve-probability summaries of one cell's per-question table."""
    out = {"n_questions": float(len(df)), "mean_solve_prob": float(df["solve_prob"].mean()),
           "mean_r01": float(df["r01"].mean())}  # fmt: skip
    if "leaked" in df and df["leaked"].notna().any():
        known = df[df["leaked"].notna()]
        for flag, name in ((True, "leaked"), (False, "unleaked")):
            part = known[known["leaked"] == flag]
            if len(part):
                out[f"mean_solve_prob_{name}"] = float(part["solve_prob"].mean())
    return out


def grading_metrics(grading: dict[str, Any] | None) -> dict[str, float]:
    """A cell's ``RuleAgreement`` counts as metrics: ``n_rule_disagree`` and, under ``grading.``, the rest."""
    if not grading:
        return {}
    out = {"n_rule_disagree": float(grading["n_disagree"]), "grading.n_responses": float(grading["n_responses"])}
    out.update({f"grading.correct_{rule}": float(n) for rule, n in grading["n_correct"].items()})
    out.update({f"grading.differ_{rule}": float(n) for rule, n in grading["n_differ"].items()})
    harness = ("lm_eval_strict_match", "lm_eval_flexible_extract")
    return {**out, **{f"grading.{k}": float(grading[k]) for k in harness if grading.get(k) is not None}}


def _wait_for_clean(tracker: Tracker, clean_id: str, timeout: float) -> Any | None:
    deadline = time.time() + timeout
    delay = 1.0
    while True:
        run = tracker.finished_run(clean_id)
        if run is not None or time.time() > deadline:
            return run
        time.sleep(delay)
        delay = min(delay * 1.5, 10.0)


def _ignore_sigterm() -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _exit_on_lost_system_exit(unraisable: Any) -> None:
    if isinstance(unraisable.exc_value, SystemExit):
        sys.stdout.flush()
        sys.stderr.flush()
        code = unraisable.exc_value.code
        os._exit(code if isinstance(code, int) else 1)
    _DEFAULT_UNRAISABLEHOOK(unraisable)


def quiet_exit() -> None:
    """Let this trial worker's exit finish without a traceback in the sweep's log.

    Ray turns SIGTERM (Tune retiring a trial actor, the driver exiting) into ``SystemExit(1)`` wherever the
    main thread is; inside a weakref callback Python prints "Exception ignored in ... SystemExit: 1", which
    reads as a failure. So, once per worker: from its first atexit handler on SIGTERM is ignored (SIGKILL
    still follows a hung teardown), and an unraisable ``SystemExit`` ends the process with its code."""
    global _QUIET_EXIT
    if not _QUIET_EXIT:
        atexit.register(_ignore_sigterm)
        sys.unraisablehook = _exit_on_lost_system_exit
        _QUIET_EXIT = True


_DEFAULT_UNRAISABLEHOOK = sys.unraisablehook
_QUIET_EXIT = False


def _decode(ctx: SweepContext, cid: str, cell: Any, board: Any) -> dict[str, Any]:
    """The result of ``cell`` from the first free engine of its family, released after."""
    import ray

    name = ray.get(ctx.pool.acquire.remote(cell.family, cid))
    _set_state(board, cid, "running")
    decoded = False
    try:
        engine = ray.get_actor(name, namespace=ENGINE_NAMESPACE)
        out = ray.get(engine.run_cell.remote(cell, board, pool=ctx.pool, name=name))
        decoded = True
        return out
    finally:
        ctx.pool.release.remote(cid, decoded)


def _score_against_clean(ctx: SweepContext, tracker: Tracker, run_id: str, meta: dict[str, Any], df: Any,
                         tmp: str) -> tuple[dict[str, float], dict[str, Any], dict[str, str]]:  # fmt: skip
    """Step 4: the metrics, params and tags to log (only ``railsweep.clean_missing`` if the clean is late)."""
    if (clean_run := _wait_for_clean(tracker, meta["clean_id"], ctx.clean_wait_s)) is None:
        return {}, {}, {"railsweep.clean_missing": "true"}
    clean_df = download_questions(tracker, clean_run, Path(tmp) / "clean")
    scores = score_pair(clean_df, df, B=ctx.B, n_boot=ctx.n_boot, seed=ctx.score_seed)
    score_metrics, score_params = split_constants(flatten_scores(scores))
    cfg = meta["config"]
    title = f"{cfg['family']}/{cfg.get('domain')} {meta['label']}"
    plot = scatter_clean_vs_mitigated(clean_df, df, Path(tmp) / "clean_vs_mitigated.png", title=title)
    tracker.log_artifact(run_id, plot, "plots")
    return score_metrics, score_params, {TAG_CLEAN_RUN: clean_run.info.run_id}


def _set_state(board: Any, cid: str, state: str) -> None:
    if board is not None:
        board.set_state.remote(cid, state)


def run_cell_trial(config: dict[str, Any], ctx: SweepContext) -> dict[str, Any]:
    """Tune function trainable; ``config = {"cell_id": ...}``."""
    from ray import tune

    quiet_exit()
    apply_thread_budget(ctx.threads)
    cid = config["cell_id"]
    meta = ctx.cells[cid]
    tracker = Tracker(ctx.tracking_uri, ctx.experiment_id)
    board = ctx.board
    if tracker.finished_run(cid) is not None:
        _set_state(board, cid, "done")
        tune.report({"skipped": 1})
        return {"skipped": 1}
    cfg = meta["config"]
    run_id = tracker.start_cell_run(ctx.parent_id, cid, run_name=meta["run_name"],
                                    tags={TAG_ROLE: cfg["role"], **meta["run_tags"], **ctx.run_tags})
    try:
        out = _decode(ctx, cid, meta["cell"], board)
        metrics = {"time.busy_s": out["busy_s"], "time.eval_s": out["eval_s"], "n_samples": float(out["n_samples"]),
                   "n_samples_resumed": float(out.get("n_resumed", 0))}  # read back from an earlier, killed try
        params, df = dict(meta["params"]), out["questions"]
        metrics.update(cell_summary(df))
        metrics.update(grading_metrics(out["grading"]))
        with tempfile.TemporaryDirectory(prefix=f"trial-{cid}-") as tmp:
            paths = write_files(out["files"], tmp)
            tags = {TAG_QUESTIONS_FILE: paths["questions"].name, TAG_RESPONSES_FILE: paths["responses"].name}
            if meta.get("clean_id"):
                score_metrics, score_params, clean_tags = _score_against_clean(ctx, tracker, run_id, meta, df, tmp)
                metrics.update(score_metrics)
                params.update(score_params)
                tags.update(clean_tags)
            tracker.log(run_id, params=params, metrics=headline_first(metrics), tags=tags)
            tracker.log_artifact(run_id, paths["questions"], RESULTS_DIR)
            tracker.log_artifact(run_id, paths["responses"], RESULTS_DIR)
        tracker.terminate(run_id, "FINISHED")
    except BaseException as e:
        with contextlib.suppress(TrackingError):
            tracker.end_failed_cell(run_id, ctx.parent_id, f"{type(e).__name__}: {e}")
        _set_state(board, cid, "failed")
        raise
    _set_state(board, cid, "done")
    result = {k: v for k, v in metrics.items() if "." not in k}
    tune.report(result)
    return result
