"""Long-lived engine actors (one per core or GPU, dealt out over the families: ``railsweep.sweep.pool``) and
the progress board.

The driver creates every actor before ``Tuner.fit()``: a task or actor created
inside a trial would be captured by the trial's CPU-only placement group
(``ray-mlflow-notes.md`` §1.4). An engine actor holds one family's base model
and all its LoRA adapters (clean, co_gsm8k, co_pq) and evaluates whole cells:
trials send a cell config and get the cell's result files back as bytes, so
nothing depends on a shared filesystem. The actor is restarted when it dies
(``max_restarts``) and the in-flight cell is retried (``max_task_retries``);
cells write to a fresh temporary directory, so a retry is idempotent.

Thread budget: every engine actor runs ``threads`` torch/OpenMP threads (one with the default
one engine per core, :func:`railsweep.sweep.driver.plan_resources`), set before torch loads (``OMP_NUM_THREADS``
and friends in the actor's environment) and again with ``torch.set_num_threads``;
trials run one. Idle OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE``) instead of
spinning: on a 2-core machine shared with other jobs, 2-thread runs with the default
spin-wait swung 10-30x (one matmul: median 10.4 ms against a best of 0.36 ms) and
PASSIVE removed that, at ~28 % on a quiet machine; one thread per engine was 1.08x
faster than two under PASSIVE. A sweep is never a quiet machine (engines and trials
share the cores), so PASSIVE is the default (``resources.omp_wait_policy``).

This module never calls ``ray.init``; :func:`create_engine_actor` and
:func:`create_progress_board` wrap plain classes with ``ray.remote`` on demand.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from railsweep.engines.threads import apply_thread_budget, thread_env

ENGINE_NAMESPACE = "railsweep"


def engine_name(sweep_id: str, family: str, replica: int = 0) -> str:
    return f"engine-{sweep_id}-{family}-{replica}"


class _CountingEngine:
    """Wraps an engine to count decoded samples and report them to the progress board."""

    def __init__(self, engine: Any, on_samples: Any):
        self._engine = engine
        self._on = on_samples
        self.name = getattr(engine, "name", "engine")

    def generate(self, requests: Any) -> Any:
        out = self._engine.generate(requests)
        self._on(sum(len(c.samples) for c in out))
        return out

    def __getattr__(self, item: str) -> Any:  # adapters(), supports(), close(), model internals
        return getattr(self._engine, item)


class EngineServer:
    """One family's engine. Methods are called by trials through a named actor handle.

    ``threads``: torch threads of this process (None = torch's default); ``prompts_per_call``:
    prompts per engine call (``DecodeSettings.batch_size``; the engine's own batch is
    ``engine_config["max_batch_size"]``).
    """

    def __init__(
        self,
        engine_config: dict[str, Any],
        threads: int | None = None,
        cache_dir: str | None = None,
        prompts_per_call: int = 64,
    ):
        if threads:
            apply_thread_budget(threads)
        import torch

        from railsweep.engines.config import EngineConfig
        from railsweep.engines.factory import build_engine

        self.threads = torch.get_num_threads()
        self.prompts_per_call = prompts_per_call
        self.config = EngineConfig(
            **{**engine_config, "adapters": tuple(map(tuple, engine_config["adapters"]))}
        )
        t0 = time.perf_counter()
        self.engine = build_engine(self.config)
        self.load_s = time.perf_counter() - t0
        self.cache_dir = cache_dir
        self._fallback: Any = None  # a transformers engine for strategies the primary backend cannot run
        self.busy_s = 0.0
        self.cells = 0
        self.samples = 0

    def ready(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "adapters": list(self.engine.adapters()),
            "load_s": self.load_s,
            "threads": self.threads,
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
            "max_batch_size": getattr(self.engine, "max_batch_size", None),
        }

    def engine_for(self, strategy: str) -> Any:
        """The primary engine, or (built once, lazily) a transformers engine over the same weights when the
        strategy needs an intervention the primary backend lacks (Shortcut patching on vLLM)."""
        import dataclasses

        from railsweep.strategy_registry import registration

        if all(self.engine.supports(kind) for kind in registration(strategy).interventions):
            return self.engine
        if self._fallback is None:
            from railsweep.engines.factory import build_engine

            self._fallback = build_engine(dataclasses.replace(self.config, backend="transformers"))
        return self._fallback

    def run_cell(self, cell: dict[str, Any], board: Any = None) -> dict[str, Any]:
        """Evaluate one cell; returns its per-question and responses Parquet files as bytes plus timings."""
        from railsweep.config import CellConfig
        from railsweep.evaluate import evaluate_cell

        cfg = CellConfig.from_dict(cell)
        cid = cfg.cell_id

        def on_samples(n: int) -> None:
            self.samples += n
            if board is not None:
                board.add_samples.remote(cid, n)

        t0 = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory(prefix=f"cell-{cid}-") as tmp:
                res = evaluate_cell(
                    cfg,
                    _CountingEngine(self.engine_for(cfg.strategy), on_samples),
                    out_dir=tmp,
                    batch_size=self.prompts_per_call,
                    cache_dir=self.cache_dir,
                )
                files = {
                    "questions": (res.paths.questions.name, res.paths.questions.read_bytes()),
                    "responses": (res.paths.responses.name, res.paths.responses.read_bytes()),
                }
        finally:
            busy = time.perf_counter() - t0
            self.busy_s += busy
        self.cells += 1
        return {
            "files": files,
            "busy_s": busy,
            "n_samples": res.n_samples,
            "eval_s": res.wall_s,
            "pid": os.getpid(),
        }

    def stats(self) -> dict[str, Any]:
        return {"busy_s": self.busy_s, "cells": self.cells, "samples": self.samples, "load_s": self.load_s}


class ProgressBoard:
    """Live cell states and sample counts, written by trials and engines, read by the driver.

    ``fault``: the test hook of :mod:`railsweep.sweep.faults` (None outside fault-injection tests), fired
    when the ``after_cells``-th cell of this run is reported done: the board is where that event happens.
    """

    def __init__(self, total: int, skipped: int = 0, fault: Any = None):
        self.total = total
        self.skipped = skipped
        self.states: dict[str, str] = {}
        self.samples = 0
        self.t0 = time.time()
        self.fault = fault
        self.done = 0

    def set_state(self, cell_id: str, state: str) -> None:
        if state == "done" and self.states.get(cell_id) != "done":
            self.done += 1
            if self.fault is not None and self.done == self.fault.after_cells:
                self.fault.fire()
        self.states[cell_id] = state

    def add_samples(self, cell_id: str, n: int) -> None:
        self.samples += n

    def snapshot(self) -> dict[str, Any]:
        counts = {"done": 0, "running": 0, "failed": 0}
        for s in self.states.values():
            if s in counts:
                counts[s] += 1
        elapsed = max(time.time() - self.t0, 1e-9)
        return {
            "total": self.total,
            "skipped": self.skipped,
            **counts,
            "samples": self.samples,
            "samples_per_s": self.samples / elapsed,
            "elapsed_s": elapsed,
        }


def create_engine_actor(
    name: str,
    engine_config: dict[str, Any],
    *,
    num_gpus: float,
    num_cpus: float,
    threads: int | None,
    max_restarts: int,
    max_task_retries: int,
    cache_dir: str | None = None,
    prompts_per_call: int = 64,
    omp_wait_policy: str | None = "PASSIVE",
) -> Any:
    """Start a named engine actor (call from the driver, never from a trial).

    With ``threads``, the actor's process starts with :func:`thread_env` (threads and
    ``omp_wait_policy``), so OpenMP reads them when torch loads.
    """
    import ray

    env = {"env_vars": thread_env(threads, omp_wait_policy)} if threads else None
    return (
        ray.remote(EngineServer)
        .options(
            name=name,
            namespace=ENGINE_NAMESPACE,
            num_gpus=num_gpus,
            num_cpus=num_cpus,
            max_restarts=max_restarts,
            max_task_retries=max_task_retries,
            runtime_env=env,
        )
        .remote(engine_config, threads, cache_dir, prompts_per_call)
    )


def create_progress_board(total: int, skipped: int, fault: Any = None) -> Any:
    """The board actor (from the driver). A ``kill-driver`` fault runs it on the driver's node, where the
    driver's pid means the driver."""
    import ray

    options: dict[str, Any] = {"num_cpus": 0}
    if fault is not None and fault.kind == "kill-driver":
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = ray.get_runtime_context().get_node_id()
        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
    return ray.remote(ProgressBoard).options(**options).remote(total, skipped, fault)


def write_files(files: dict[str, tuple[str, bytes]], out_dir: str | Path) -> dict[str, Path]:
    """Materialise the bytes returned by :meth:`EngineServer.run_cell` in ``out_dir``."""
    out = {}
    for kind, (name, blob) in files.items():
        p = Path(out_dir) / name
        p.write_bytes(blob)
        out[kind] = p
    return out
