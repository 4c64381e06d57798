"""What ``railsweep detect`` does once it runs: the report, or every input checked, the jobs scored and
``detections.parquet`` written. Loads pandas (imported when the command runs); torch only for model-side
detectors.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from railsweep import provenance
from railsweep.atomic import write_atomic
from railsweep.commands.detect_ray import ray_session, use_ray
from railsweep.commands.task_args import check_task, load_named_task, task_dir_of
from railsweep.detection.base import DetectInputs, build_detector, detector_classes, known_detectors
from railsweep.detection.corpus import check_corpus_paths
from railsweep.detection.items import check_disjoint, read_items, task_items
from railsweep.detection.output import read_detections, write_detections
from railsweep.detection.perturb import items_of, perturbation_table, read_pair
from railsweep.detection.report import check_weight, flags_from_detections, sa_ppg_report, subset_report
from railsweep.detection.run import detect
from railsweep.detection.scoring import Thresholding, check_threshold
from railsweep.detection.truth import to_markdown, truth_table
from railsweep.detection.world import cached_world, world_jobs
from railsweep.engines.devices import resolve_device
from railsweep.errors import ConfigError
from railsweep.limits import check_decode_memory
from railsweep.results.io import check_writable_dir, read_cell
from railsweep.tasks.task_ref import build_task, with_data_file


def run_detect(args: argparse.Namespace) -> int:
    """``railsweep detect`` past its action check: the report, or every detector and input checked before any
    work, then the jobs scored and written (:func:`_run`)."""
    if args.action == "report":
        return run_report(args)
    # 1. check every input before any work
    detectors = build_detectors(args)
    check_task(args)  # a task file checked whole, before its rows are read
    thresholding = Thresholding(args.threshold, args.control_rate)
    for d in detectors:
        check_threshold(d, thresholding)
    names = {d.name for d in detectors}
    if "cdd" in names:
        check_decode_memory(args.m, args.max_new_tokens)
    if names & {"loss", "mink", "cdd"}:
        resolve_device(args.device)  # a device this machine lacks fails before a model loads
    if args.ray_address and not args.ray:
        raise ConfigError("--ray-address needs --ray")
    if args.ray and "ngram" not in names:
        raise ConfigError("--ray runs the ngram detector's corpus scan; add --detector ngram")
    base_inputs = DetectInputs(text_field=args.text_field, batch_size=args.batch_size, device=args.device,
                               **{k: _path(getattr(args, k)) for k in ("responses", "fewshot", "original",
                                                                        "paraphrased")})  # fmt: skip
    scratch = tempfile.TemporaryDirectory(prefix="railsweep-detect-")  # --world's corpus files
    try:
        return _run(args, detectors, thresholding, names, base_inputs, Path(scratch.name))
    finally:
        scratch.cleanup()


def _run(args, detectors, thresholding, names, base_inputs, scratch: Path) -> int:
    """The run once every option is checked: 1. the jobs (one per family and domain of ``--world``, else one
    over the given files); 2. score them; 3. write each file atomically and print the truth table."""
    if args.world:
        _check_world_options(args, names)
        jobs = _world_jobs(args, detectors, base_inputs, scratch)
    else:
        jobs = [_file_job(args, detectors, names, base_inputs)]
    table = _score(args, detectors, thresholding, jobs)
    _write(args, detectors, table)
    return 0


def _check_world_options(args: argparse.Namespace, names: set[str]) -> None:
    """``--world`` brings its own items, corpus and models, so options naming them would be silently ignored."""
    if "perturb" in names:
        raise ConfigError("perturb reads two cells (--original, --paraphrased), not --world")
    if args.test or args.task or args.task_dir or args.control or args.corpus or args.model:
        raise ConfigError("--world supplies the items, corpus and models; "
                          "drop --test/--task/--task-dir/--control/--corpus/--model")


def _file_job(args, detectors, names: set[str], base_inputs: DetectInputs):
    """The one job over files: test and control items read and checked disjoint, each detector's inputs present
    (perturb's two tables aligned) before any scoring."""
    original = None
    if "perturb" in names:
        base_inputs.require("perturb", "original", "paraphrased")
        original, paraphrased = read_pair(args.original, args.paraphrased)
        perturbation_table(original, paraphrased)  # misaligned tables fail here, before any scoring
    stop = None
    if args.task or args.task_dir:
        test, control, stop = _task_items(args)
    else:
        test = _file_items(args, names, original)
        control = read_items(args.control, "control") if args.control else []
    check_disjoint(test, control)
    inputs = dataclasses.replace(base_inputs,
                                 corpus=tuple(check_corpus_paths(args.corpus)) if "ngram" in names else (),
                                 model=_path(args.model), adapter=_path(args.adapter),
                                 reference_adapter=_path(args.reference_adapter), stop=stop)  # fmt: skip
    for d in detectors:
        inputs.require(d.name, *_needs(d.name, inputs, from_task=stop is not None))
    return (None, None, test, control, inputs, detectors)


def _file_items(args: argparse.Namespace, names: set[str], original: Any):
    """The test items of ``--test`` (or, for perturb alone, the questions of its two tables)."""
    if args.test:
        return read_items(args.test, "test", args.leak_split)
    if names == {"perturb"}:
        return items_of(original)
    raise ConfigError("give --test FILE or --task FILE|NAME (or --world PRESET)")


def _needs(detector: str, inputs: DetectInputs, *, from_task: bool) -> tuple[str, ...]:
    """The inputs ``detector`` reads, checked before any scoring: cdd decodes (model, and the GSM8K prompt's
    exemplars unless a task renders the prompts) only without ``--responses``."""
    if detector == "cdd":
        return () if inputs.responses else ("model",) if from_task else ("model", "fewshot")
    return {"ngram": ("corpus",), "perturb": ("original", "paraphrased")}.get(detector, ("model",))


def _task_items(args: argparse.Namespace):
    """The test split of ``--task`` as items, the rows of ``--control`` read with the same task's fields, and the
    task's stop sequences; the items carry the prompts the task renders, which cdd decodes."""
    if args.test:
        raise ConfigError("--test and --task both name the test items; give one")
    if args.task is None:
        raise ConfigError("--task-dir needs --task (the task file whose {task_dir} it is)")
    task_dir = task_dir_of(args)
    task = load_named_task(args, task_dir, leak_split=args.leak_split)
    control = []
    if args.control:
        control_spec = with_data_file(check_task(args), args.control)  # type: ignore[arg-type]
        control = task_items(build_task(control_spec, task_dir), group="control")
    return task_items(task), control, task.stop


def _world_jobs(args, detectors, base_inputs, scratch: Path):
    world = cached_world(args.world)
    families = args.family or list(world.families)
    domains = args.domain or list(world.config.contamination.domains)
    jobs = world_jobs(world, detectors, base_inputs, families, domains, scratch, n_control=args.n_control)
    return [(j.family, j.domain, j.test, j.control, j.inputs, list(j.detectors)) for j in jobs]


def _score(args, detectors, thresholding: Thresholding, jobs):
    """Every job's per-item table, concatenated; the Ray session (``--ray``) spans all jobs."""
    session = contextlib.nullcontext()
    if args.ray:
        use_ray(detectors)
        session = ray_session(args.ray_address)
    with session:
        tables = [detect(dets, test, control, inputs, thresholding, family=fam, domain=dom)
                  for fam, dom, test, control, inputs, dets in jobs]  # fmt: skip
    return pd.concat(tables, ignore_index=True)


def _write(args, detectors, table) -> None:
    """``detections.parquet`` with the run's settings and provenance, and the truth table where it is known."""
    given = ("world", "test", "task", "task_dir", "control", "original", "paraphrased", "threshold",
             "control_rate")
    run_info = {"detectors": {d.name: dataclasses.asdict(d.config) for d in detectors},
                **{k: getattr(args, k) for k in given}, "ray": bool(args.ray)}  # fmt: skip
    out = Path(args.out)
    has_truth = table.leaked.notna().any()
    summary = truth_table(table, n_boot=args.n_boot) if has_truth else None
    write_detections(out, table, run_info, provenance.collect([]))
    if summary is not None:
        write_atomic(out / "truth.csv", lambda tmp: summary.to_csv(tmp, index=False))
        md = to_markdown(summary)
        write_atomic(out / "truth.md", lambda tmp: tmp.write_text(md, encoding="utf-8"))
        print(md, end="")
    print(f"wrote {out / 'detections.parquet'} ({len(table)} rows)")


def build_detectors(args: argparse.Namespace):
    """The ``--detector`` detectors with their options' settings (unknown names get a "did you mean")."""
    params = {
        "ngram": {"n": tuple(args.n), "fields": args.fields, "tokenizer": args.tokenizer, "bits": args.bits},
        "mink": {"k": args.k},
        "cdd": {"alpha": args.cdd_alpha, "xi": args.cdd_xi, "m": args.m, "temperature": args.temperature,
                "max_new_tokens": args.max_new_tokens},
    }  # fmt: skip
    return [build_detector(n, params.get(n, {})) for n in _detector_names(args.detector)]


def _detector_names(raw: list[str]) -> list[str]:
    names = _split_names(raw)
    if not names:
        raise ConfigError("--detector: give at least one detector")
    for n in names:
        if n not in known_detectors():
            detector_classes(n)  # raises with "did you mean"
    return list(dict.fromkeys(names))


def _split_names(raw: list[str]) -> list[str]:
    """``--detector`` values, repeated or comma-separated."""
    return [n.strip() for r in raw for n in r.split(",") if n.strip()]


def _path(x: str | None) -> Path | None:
    return Path(x) if x else None


def _markdown(table: pd.DataFrame) -> str:
    def cell(v) -> str:
        if isinstance(v, float):
            return "-" if v != v else f"{v:.3f}"
        return str(v)

    head = "| " + " | ".join(table.columns) + " |\n|" + "---|" * len(table.columns) + "\n"
    rows = ("| " + " | ".join(cell(v) for v in row) + " |\n" for row in table.itertuples(index=False))
    return head + "".join(rows)


def run_report(args: argparse.Namespace) -> int:
    """``railsweep detect report``: full-set and clean-subset scores side by side for the flagged items.

    1. check every input (the cell, the detections, one detector setting, the weight, a writable ``--out``);
    2. :func:`~railsweep.detection.report.subset_report` (and ``sa_ppg_report`` with ``--clean``);
    3. print the table and write ``OUT/report.csv``, ``OUT/report.md`` (``OUT/report_sa_ppg.csv``) atomically.
    """
    # 1. check every input
    if not (args.questions and args.flags and args.detector):
        raise ConfigError("detect report needs --questions FILE, --flags DIR|FILE and --detector NAME")
    detectors = _split_names(args.detector)
    if len(detectors) != 1:
        raise ConfigError(f"detect report takes one --detector, got {detectors}")
    check_weight(args.weight)
    check_writable_dir(args.out)
    _, questions = read_cell(args.questions)
    clean = read_cell(args.clean)[1] if args.clean else None
    domain = args.domain[0] if args.domain else None
    family = args.family[0] if args.family else None
    flagged = flags_from_detections(read_detections(args.flags), detectors[0], args.setting, family, domain)

    # 2. the tables
    table = subset_report(questions, flagged, readout=args.readout, weight=args.weight, n_boot=args.n_boot,
                          seed=args.seed)  # fmt: skip
    pair = None if clean is None else sa_ppg_report(clean, questions, flagged, n_boot=args.n_boot,
                                                     seed=args.seed)  # fmt: skip

    # 3. print and write
    out = Path(args.out)
    md = _markdown(table)
    write_atomic(out / "report.csv", lambda tmp: table.to_csv(tmp, index=False))
    if pair is not None:
        md += "\n" + _markdown(pair)
        write_atomic(out / "report_sa_ppg.csv", lambda tmp: pair.to_csv(tmp, index=False))
    write_atomic(out / "report.md", lambda tmp: tmp.write_text(md, encoding="utf-8"))
    print(md, end="")
    print(f"wrote {out / 'report.csv'} ({len(flagged)} of {len(questions)} questions flagged by "
          f"{detectors[0]})")
    return 0
