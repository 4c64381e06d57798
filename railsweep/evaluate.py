"""Evaluate one cell: one model (+adapter) under one strategy on one task, written to disk.

The clean reference cell of a setting is the same call with strategy ``identity`` on the clean adapter and
``role="clean"``; every metric compares a mitigated cell against it question by question.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from railsweep import provenance as prov
from railsweep.config import CellConfig
from railsweep.engines.base import Engine
from railsweep.engines.config import EngineConfig
from railsweep.errors import ConfigError, DataError
from railsweep.results.io import CellPaths, CellTables, cell_tables, write_tables
from railsweep.strategies.base import EvalContext, QuestionOutcome, build_strategy
from railsweep.tasks.agreement import RuleAgreement, rule_agreement
from railsweep.tasks.base import Question, Task
from railsweep.tasks.kinds.file_task import FileTask
from railsweep.tasks.kinds.gsm8k import GSM8KTask
from railsweep.tasks.kinds.math import MathTask
from railsweep.tasks.lm_eval.task import LmEvalTask
from railsweep.tasks.task_ref import build_task


@dataclass
class CellResult:
    cell: CellConfig
    paths: CellPaths
    outcomes: list[QuestionOutcome]
    wall_s: float
    n_samples: int  # responses decoded (greedy trajectories included)
    agreement: RuleAgreement  # how the other answer rules would have graded the same responses
    tables: CellTables  # the two tables as written (an engine actor hands them on without reading its files)

    @property
    def n_questions(self) -> int:
        return len(self.outcomes)

    @property
    def mean_solve_prob(self) -> float:
        return sum(o.solve_prob for o in self.outcomes) / max(self.n_questions, 1)

    @property
    def mean_r01(self) -> float:
        return sum(o.r01 for o in self.outcomes) / max(self.n_questions, 1)

    def summary(self) -> str:
        """One line: id, label, size, mean solve probability, mean 0/1 readout, answer rule, time."""
        a = self.agreement
        return (
            f"cell {self.cell.cell_id} [{self.cell.role}] {self.cell.label()} adapter={self.cell.adapter}: "
            f"{self.n_questions} questions, m={self.cell.m}, mean r={self.mean_solve_prob:.4f}, "
            f"mean r01={self.mean_r01:.4f}, answer rule {a.answer_rule} ({a.n_disagree} of {a.n_responses} "
            f"responses graded differently by another rule), {self.n_samples} samples in {self.wall_s:.1f}s"
        )


def load_task(cell: CellConfig) -> Task:
    """The task a cell names: its task file (:class:`FileTask`) or harness task (:class:`LmEvalTask`), else
    GSM8K (or MATH for ``answer_type="math"``) format in ``cell.task_dir``; malformed data, or a task file
    edited since the cell was configured → DataError."""
    spec = cell.task_spec()
    if spec is not None:
        if cell.task_sha256 is not None and cell.task_sha256 != spec.sha256:
            raise DataError(
                f"task {cell.task} ({spec.source}) changed since this cell was configured (sha256 {spec.sha256[:16]}..., "
                f"the cell records {cell.task_sha256[:16]}...)"
            )
        return build_task(spec, cell.task_dir, split=cell.split, fewshot=cell.fewshot, limit=cell.limit,
                          leak_split=cell.leak_split, answer_rule=cell.answer_rule)  # fmt: skip
    root = Path(cell.task_dir)
    if not root.is_dir():
        raise DataError(f"task directory not found: {root}")
    task_class = MathTask if cell.answer_type == "math" else GSM8KTask
    return task_class.from_dir(root, split=cell.split, fewshot_path=cell.fewshot, limit=cell.limit,
                               leak_split=cell.leak_split, answer_rule=cell.answer_rule)  # fmt: skip


def cell_provenance(cell: CellConfig, engine_config: EngineConfig) -> dict[str, Any]:
    """What a cell's files record of their making: :func:`railsweep.provenance.collect` over its data files and
    the sha256 of the weight files it decodes with (:func:`railsweep.provenance.weights`)."""
    used = prov.weights(engine_config.model, engine_config.adapters, cell.adapters_used())
    return {**prov.collect(cell.task_files()), "weights": used}


def evaluate_cell(
    cell: CellConfig, engine: Engine, task: Task | None = None, *, out_dir: str | Path, batch_size: int = 64,
    cache_dir: str | Path | None = None, progress: Callable[[int], None] | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> CellResult:
    """Run ``cell`` on ``engine`` and write its result files into ``out_dir``.

    1. check the engine serves the cell's adapters (and the clean/base ones it names);
    2. load the task from the cell when none is given (a given task that grades under another answer
       rule or answer type than the cell's is refused), keep the first ``cell.limit`` questions;
    3. build the strategy from the registry and run it in an :class:`EvalContext` with the cell's settings;
    4. check one outcome per question, re-grade every response under every answer rule
       (:func:`rule_agreement`), then write the cell atomically (:func:`cell_tables`, :func:`write_tables`).
    """
    _check_served_adapters(cell, engine)
    if task is None:
        task = load_task(cell)
    _check_task_grading(cell, task)
    questions = _questions(cell, task)
    outcomes, wall, decoded = _run_strategy(cell, engine, task, questions, batch_size, cache_dir, progress)
    _check_one_outcome_per_question(cell, outcomes, questions)
    agreement = _agreement(cell, task, outcomes, questions)
    if provenance is None:
        provenance = prov.collect(cell.task_files())
    tables = cell_tables(cell, outcomes, questions, provenance, agreement.to_dict())
    paths = write_tables(out_dir, cell.cell_id, tables)
    return CellResult(cell=cell, paths=paths, outcomes=outcomes, wall_s=wall, n_samples=decoded,
                      agreement=agreement, tables=tables)  # fmt: skip


def _run_strategy(
    cell: CellConfig, engine: Engine, task: Task, questions: Sequence[Question], batch_size: int,
    cache_dir: str | Path | None, progress: Callable[[int], None] | None,
) -> tuple[list[QuestionOutcome], float, int]:
    """Step 3; returns (the outcomes, the wall time in seconds, the responses decoded), each batch of
    responses also told to ``progress``."""
    strategy = build_strategy(cell.strategy, config=cell.strategy_config)
    decoded = 0

    def count(n: int) -> None:
        nonlocal decoded
        decoded += n
        if progress is not None:
            progress(n)

    ctx = EvalContext(engine=engine, task=task, adapter=cell.adapter,
                      settings=cell.decode_settings(batch_size), clean_adapter=cell.clean_adapter,
                      base_adapter=cell.base_adapter,
                      cache_dir=Path(cache_dir) if cache_dir is not None else None,
                      progress=count)  # fmt: skip
    t0 = time.perf_counter()
    outcomes = list(strategy.run(ctx, questions))
    return outcomes, time.perf_counter() - t0, decoded


def _agreement(
    cell: CellConfig, task: Task, outcomes: Sequence[QuestionOutcome], questions: Sequence[Question]
) -> RuleAgreement:
    """Every response re-graded under every answer rule (:func:`rule_agreement`)."""
    by_index = {q.index: q for q in questions}
    return rule_agreement(((s.text, by_index[o.index]) for o in outcomes for s in o.samples),
                          cell.answer_rule, tuple(task.stop), cell.answer_type,
                          task if isinstance(task, (FileTask, LmEvalTask)) else None)  # fmt: skip


def _check_served_adapters(cell: CellConfig, engine: Engine) -> None:
    """Every adapter the cell names must be served, or a strategy would decode the base model in its place."""
    served = set(engine.adapters())
    for what, name in zip(("adapter", "clean_adapter", "base_adapter"), cell.adapters_used()):
        if name is not None and name not in served:
            raise ConfigError(f"{what} {name!r} not found in the engine; available adapters: "
                              f"{sorted(served) or 'none'}")


def _check_task_grading(cell: CellConfig, task: Task) -> None:
    """A given task must grade as the cell says, or the cell's recorded answer rule and type would be wrong."""
    for what in ("answer_rule", "answer_type"):
        cell_value = getattr(cell, what)
        task_value = getattr(task, what, cell_value)  # a task without the attribute grades its own way
        if task_value != cell_value:
            raise ConfigError(f"the task grades under {what}={task_value!r} but the cell says {what}={cell_value!r}")


def _questions(cell: CellConfig, task: Task) -> Sequence[Question]:
    """The task's first ``cell.limit`` questions (all without a limit); none at all is a data error."""
    questions: Sequence[Question] = list(task.questions())
    if cell.limit is not None:
        questions = questions[: cell.limit]
    if not questions:
        raise DataError(f"task in {cell.task_dir} (split {cell.split!r}) has no questions")
    return questions


def _check_one_outcome_per_question(
    cell: CellConfig, outcomes: Sequence[QuestionOutcome], questions: Sequence[Question]
) -> None:
    """A strategy that drops or repeats a question would leave the per-question metrics misaligned."""
    got = sorted(o.index for o in outcomes)
    want = sorted(q.index for q in questions)
    if got != want:
        missing = sorted(set(want) - set(got))[:10]
        raise DataError(f"strategy {cell.strategy!r} returned {len(got)} outcomes for {len(want)} questions"
                        f" (missing question_index {missing})")
