"""A sweep's detection step: the spec's detectors on every family x domain, scored against the truth, on MLflow.

One Ray task after the trials, once the engines are gone (the model-side detectors get the CPUs). Steps:
1. fetch the readout cells' Parquet files (:mod:`railsweep.sweep.plan.detect_cells`); a pair whose readout did
   not finish drops cdd/perturb (listed under ``skipped``), never decodes anew;
2. the jobs of :func:`railsweep.detection.world.world_jobs`, test items plus fresh controls;
3. :func:`railsweep.detection.run.detect` per job and detector (its own fixed threshold, else calibrated
   on the controls at ``detection.control_rate``, else the detector's default);
4. the truth table (:func:`railsweep.analysis.detection.truth_summary`) and the ROC figure;
5. log them on the parent run under ``detection/``, with per row of the truth table the metrics
   ``detect.<detector>.<setting>.<family|corpus>.<domain>.<stat>`` (:data:`SUMMARY_METRICS`);
6. return the truth table's Markdown (the driver prints it).
"""

from __future__ import annotations

import dataclasses
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from railsweep import provenance
from railsweep.analysis.detection import roc_figure, truth_markdown, truth_summary
from railsweep.atomic import write_atomic
from railsweep.detection import DetectInputs, Thresholding, detect
from railsweep.detection.output import write_detections
from railsweep.detection.world import world_jobs
from railsweep.engines.threads import apply_thread_budget
from railsweep.miniworld.cache import load_world
from railsweep.sweep.spec.sweep_spec import SweepSpec
from railsweep.sweep.tracking.reader import cell_files
from railsweep.sweep.tracking.tracker import DETECTION_DIR, Tracker

SUMMARY_METRICS = ("auc", "auc_lo", "auc_hi", "tpr", "fpr_unleaked", "control_rate")
_METRIC_CHARS = re.compile(r"[^A-Za-z0-9_\-.]+")


def metric_name(row: dict[str, Any], stat: str) -> str:
    """``detect.ngram.n_13_fields_question_solution.corpus.gsm8k.auc`` (MLflow's allowed characters)."""
    fam = row["family"] if isinstance(row["family"], str) else "corpus"
    parts = [row["detector"], row["setting"], fam, row["domain"]]
    return "detect." + ".".join(_METRIC_CHARS.sub("_", str(p)).strip("_") for p in parts) + f".{stat}"


def _pair_inputs(readouts: Sequence[dict[str, str]], files: dict) -> dict:
    out = {}
    for r in readouts:
        orig, para = files.get(r.get("original", "")), files.get(r.get("paraphrased", ""))
        inputs = {"responses": orig["responses"], "original": orig["questions"]} if orig is not None else {}
        if para is not None:
            inputs["paraphrased"] = para["questions"]
        out[(r["family"], r["domain"])] = inputs
    return out


def _runnable(job, skipped: list[str]) -> list[Any]:
    """The job's detectors whose inputs are present (cdd without responses would decode anew: skipped)."""
    need = {"cdd": ("responses",), "perturb": ("original", "paraphrased")}
    keep = [det for det in job.detectors if all(getattr(job.inputs, n) for n in need.get(det.name, ()))]
    skipped += [f"{det.name} {job.family}/{job.domain}: its readout cell did not finish"
                for det in job.detectors if det not in keep]  # fmt: skip
    return keep


def detect_sweep(spec: SweepSpec, experiment_id: str, parent_run_id: str, readouts: Sequence[dict[str, str]],
                 threads: int = 1) -> dict[str, Any]:  # fmt: skip
    """Steps 1-6; returns ``{"markdown", "n_rows", "skipped", "wall_s"}``."""
    t0 = time.perf_counter()
    apply_thread_budget(threads)
    tracker = Tracker(spec.tracking.uri, experiment_id)
    specs = {d.name: d for d in spec.detectors}
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="railsweep-detect-") as tmp_s:
        tmp = Path(tmp_s)
        wanted = [cid for r in readouts for k, cid in r.items() if k in ("original", "paraphrased")]
        files = cell_files(tracker, wanted, tmp / "cells")
        world = load_world(Path(spec.data_dir).parent)
        base = DetectInputs(batch_size=spec.detection.batch_size, device="cpu")
        jobs = world_jobs(world, [d.build() for d in spec.detectors], base, [f.name for f in spec.families],
                          spec.domains, tmp / "corpus", n_control=spec.detection.n_control,
                          pair_inputs=_pair_inputs(readouts, files))  # fmt: skip
        tables = []
        for job in jobs:
            for det in _runnable(job, skipped):
                t = time.perf_counter()
                th = Thresholding(specs[det.name].threshold, spec.detection.control_rate)
                tables.append(detect([det], job.test, job.control, job.inputs, th, job.family, job.domain))
                print(f"[detect] {det.name} {job.family or 'corpus'}/{job.domain}: "
                      f"{time.perf_counter() - t:.1f}s", flush=True)  # fmt: skip
        table = pd.concat(tables, ignore_index=True)
        summary = truth_summary(table, n_boot=spec.scoring.n_boot, seed=spec.scoring.seed)
        md = truth_markdown(summary)
        out = tmp / DETECTION_DIR
        run_info = {
            "detectors": {d.name: dataclasses.asdict(d.build().config) for d in spec.detectors},
            "thresholds": {d.name: d.threshold for d in spec.detectors},
            "world": str(world.root), "families": [f.name for f in spec.families], "domains": list(spec.domains),
            "readouts": list(readouts), "control_rate": spec.detection.control_rate,
            "n_control": spec.detection.n_control, "parent_run_id": parent_run_id,
        }  # fmt: skip
        paths = [write_detections(out, table, run_info, provenance.collect([]))]
        paths.append(write_atomic(out / "truth.csv", lambda p: summary.to_csv(p, index=False)))
        paths.append(write_atomic(out / "truth.md", lambda p: p.write_text(md, encoding="utf-8")))
        roc = roc_figure(table, out / "roc.png", title=spec.name)
        paths += [roc] if roc is not None else []
        for p in paths:
            tracker.log_artifact(parent_run_id, p, DETECTION_DIR)
    metrics = {metric_name(row, stat): row[stat]
               for row in summary.to_dict("records") for stat in SUMMARY_METRICS}
    wall = time.perf_counter() - t0
    metrics.update({"detect.wall_s": wall, "detect.rows": float(len(table))})
    tracker.log(parent_run_id, metrics=metrics,
                tags={"railsweep.detect_skipped": "; ".join(skipped)} if skipped else None)  # fmt: skip
    return {"markdown": md, "n_rows": len(table), "skipped": skipped, "wall_s": wall}


def run_detection(spec: SweepSpec, experiment_id: str, parent_run_id: str,
                  readouts: Sequence[dict[str, str]]) -> dict[str, Any]:  # fmt: skip
    """:func:`detect_sweep` as a Ray task holding the CPUs of the largest node (engines must be gone)."""
    import ray

    cpus = max([float(n["Resources"].get("CPU", 0)) for n in ray.nodes() if n.get("Alive")] + [1.0])
    task = ray.remote(detect_sweep).options(num_cpus=cpus, max_retries=1)
    return ray.get(task.remote(spec, experiment_id, parent_run_id, list(readouts), max(1, int(cpus))))
