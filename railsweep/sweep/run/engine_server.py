"""Long-lived engine actors, one per core or GPU, dealt out over the families (``railsweep.sweep.plan.pool``).

The driver creates every actor before ``Tuner.fit()``: one created inside a trial would be captured by the
trial's CPU-only placement group (``ray-mlflow-notes.md`` §1.4). An actor evaluates whole cells of its
family, returning the result files as bytes (no shared filesystem); a dead actor is restarted and its cell
retried, idempotently (each cell writes to a fresh temporary directory).

Thread budget: ``threads`` torch/OpenMP threads per actor, set in its environment before torch loads; idle
OpenMP threads sleep (``OMP_WAIT_POLICY=PASSIVE``): on a shared 2-core machine 2-thread runs with the default
spin-wait swung 10-30x (one matmul: median 10.4 ms against a best of 0.36 ms), PASSIVE removed that at ~28 %
on a quiet machine, and one thread per engine was 1.08x faster than two.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from railsweep.config import CellConfig
from railsweep.engines.config import EngineConfig
from railsweep.engines.factory import build_engine
from railsweep.engines.threads import apply_thread_budget, thread_env
from railsweep.evaluate import cell_provenance, evaluate_cell
from railsweep.results.io import questions_frame
from railsweep.strategy_registry import registration
from railsweep.sweep.run.actors import ENGINE_NAMESPACE
from railsweep.sweep.run.checkpoint import CheckpointedEngine, decoding_identity
from railsweep.sweep.run.sharing import SharingEngine


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
    """One family's engine at a time (``family_configs``: the families the pool may move it to; a cell or
    share of another family loads that family's model first). ``prompts_per_call``:
    ``DecodeSettings.batch_size``."""

    def __init__(self, engine_config: dict[str, Any], threads: int | None = None,
                 cache_dir: str | None = None, prompts_per_call: int = 64,
                 family_configs: dict[str, dict[str, Any]] | None = None):  # fmt: skip
        if threads:
            apply_thread_budget(threads)
        self.threads = torch.get_num_threads()
        self.prompts_per_call = prompts_per_call
        self._configs = {f: _engine_config(c) for f, c in (family_configs or {}).items()}
        self.config = _engine_config(engine_config)
        self.family = next((f for f, c in self._configs.items() if c == self.config), None)
        t0 = time.perf_counter()
        self.engine = build_engine(self.config)
        self.load_s = time.perf_counter() - t0
        self.cache_dir = cache_dir
        self._fallback: Any = None  # a transformers engine for strategies the primary backend cannot run
        self.busy_s = 0.0
        self.cells = 0
        self.samples = 0
        self.switches = 0

    def use(self, family: str | None) -> None:
        """Hold ``family``'s model (a no-op for this engine's own family, or without family configs)."""
        if family is None or family == self.family or family not in self._configs:
            return
        t0 = time.perf_counter()
        for engine in (self.engine, self._fallback):
            if engine is not None and hasattr(engine, "close"):
                engine.close()
        self.engine = self._fallback = None
        self.config = self._configs[family]
        self.engine = build_engine(self.config)
        self.family = family
        self.switches += 1
        self.load_s += time.perf_counter() - t0

    def ready(self) -> dict[str, Any]:
        return {"pid": os.getpid(), "adapters": list(self.engine.adapters()), "load_s": self.load_s,
                "threads": self.threads, "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
                "max_batch_size": getattr(self.engine, "max_batch_size", None)}  # fmt: skip

    def engine_for(self, strategy: str) -> Any:
        """The primary engine, or (built once, lazily) a transformers engine over the same weights when the
        strategy needs an intervention the primary backend lacks (Shortcut patching on vLLM)."""
        if all(self.engine.supports(kind) for kind in registration(strategy).interventions):
            return self.engine
        if self._fallback is None:
            self._fallback = build_engine(dataclasses.replace(self.config, backend="transformers"))
        return self._fallback

    def run_cell(self, cell: CellConfig | dict[str, Any], board: Any = None, pool: Any = None,
                 name: str | None = None) -> dict[str, Any]:  # fmt: skip
        """Evaluate one cell: its Parquet files as bytes, the per-question table, the answer rules' counts and
        timings. With ``pool`` and ``name`` (this actor's), its one-off jobs may go to idle engines too."""
        cfg = cell if isinstance(cell, CellConfig) else CellConfig.from_dict(cell)
        cid = cfg.cell_id
        self.use(cfg.family)

        def on_samples(n: int) -> None:
            self.samples += n
            if board is not None:
                board.add_samples.remote(cid, n)

        provenance = cell_provenance(cfg, self.config)
        engine: Any = _CountingEngine(self.engine_for(cfg.strategy), on_samples)
        if pool is not None and name is not None:
            engine = SharingEngine(engine, pool, name, cfg.strategy, cid, on_samples, cfg.family)
        if self.cache_dir is not None:  # samples read back go to the board only: self.samples counts decoded ones
            engine = CheckpointedEngine(engine, Path(self.cache_dir) / "readouts" / cid,
                                        self._identity(provenance["weights"]),
                                        lambda n: board.add_resumed.remote(cid, n) if board is not None else None)  # fmt: skip
        t0 = time.perf_counter()
        try:
            with tempfile.TemporaryDirectory(prefix=f"cell-{cid}-") as tmp:
                res = evaluate_cell(cfg, engine, out_dir=tmp, batch_size=self.prompts_per_call,
                                    cache_dir=self.cache_dir, provenance=provenance)  # fmt: skip
                paths = {"questions": res.paths.questions, "responses": res.paths.responses}
                files = {kind: (path.name, path.read_bytes()) for kind, path in paths.items()}
        finally:
            busy = time.perf_counter() - t0
            self.busy_s += busy
        resumed = getattr(engine, "resumed", 0)
        if isinstance(engine, CheckpointedEngine):
            engine.forget()
        self.cells += 1
        return {"files": files, "questions": questions_frame(res.tables.questions),
                "grading": res.agreement.to_dict(), "busy_s": busy, "n_samples": res.n_samples,
                "n_resumed": resumed, "eval_s": res.wall_s, "pid": os.getpid()}  # fmt: skip

    def _identity(self, weights: dict[str, Any]) -> str:
        """:func:`decoding_identity` of this engine: its configuration (the device and dtype it resolved)."""
        config = {**dataclasses.asdict(self.config), "weights": weights}
        return decoding_identity(config, self.config.backend, str(getattr(self.engine, "device", self.config.device)),
                                 str(getattr(self.engine, "dtype", self.config.dtype)))  # fmt: skip

    def decode(self, requests: list[Any], strategy: str, pool: Any = None, holder: str | None = None,
               family: str | None = None) -> list[Any]:  # fmt: skip
        """Decode a share of another cell's work, then give this engine back to the pool under ``holder``."""
        t0 = time.perf_counter()
        try:
            self.use(family)
            return self.engine_for(strategy).generate(requests)
        finally:
            self.busy_s += time.perf_counter() - t0
            if pool is not None and holder is not None:
                pool.release.remote(holder)

    def stats(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("busy_s", "cells", "samples", "load_s", "switches", "family")}


def _engine_config(config: dict[str, Any]) -> EngineConfig:
    return EngineConfig(**{**config, "adapters": tuple(map(tuple, config["adapters"]))})


def create_engine_actor(name: str, engine_config: dict[str, Any], *, num_gpus: float, num_cpus: float,
                        threads: int | None, max_restarts: int, max_task_retries: int,
                        cache_dir: str | None = None, prompts_per_call: int = 64,
                        omp_wait_policy: str | None = "PASSIVE",
                        family_configs: dict[str, dict[str, Any]] | None = None) -> Any:  # fmt: skip
    """Start a named engine actor (from the driver, never a trial), its process with :func:`thread_env`."""
    import ray  # optional heavy dependency: the sweep's

    env = {"env_vars": thread_env(threads, omp_wait_policy)} if threads else None
    return ray.remote(EngineServer).options(
        name=name, namespace=ENGINE_NAMESPACE, num_gpus=num_gpus, num_cpus=num_cpus,
        max_restarts=max_restarts, max_task_retries=max_task_retries, runtime_env=env,
    ).remote(engine_config, threads, cache_dir, prompts_per_call, family_configs)  # fmt: skip
