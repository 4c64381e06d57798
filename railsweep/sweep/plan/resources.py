"""The sweep's resource plan (step 4 of :func:`railsweep.sweep.run.driver.run_sweep`): how many engine actors
per family, and what each engine and trial reserves, on the Ray cluster the driver joined."""

from __future__ import annotations

import math
from typing import Any

from railsweep.sweep.plan.cells import SweepCell
from railsweep.sweep.plan.pool import engine_layout
from railsweep.sweep.spec.sweep_spec import SweepSpec


def cluster_resources() -> tuple[float, float]:
    """(CPUs, GPUs) of the Ray cluster this process joined."""
    import ray  # optional heavy dependency: the sweep's

    res = ray.cluster_resources()
    return float(res.get("CPU", 0)), float(res.get("GPU", 0))


def plan_layout(spec: SweepSpec, pending: list[SweepCell], cpus: float | None = None) -> dict[str, int]:
    """Engines per family with cells left, on ``cpus`` cores (default: the cluster's) or the GPUs."""
    cluster_cpus, gpus = cluster_resources()
    cpus = cluster_cpus if cpus is None else cpus
    gpu = spec.engine.device != "cpu" and gpus >= 1
    left = {f.name: sum(c.family == f.name for c in pending) for f in spec.families}
    return engine_layout(left, units=int(gpus if gpu else cpus), replicas=spec.resources.engine_replicas)


def plan_resources(spec: SweepSpec, n_engines: int, cpus: float | None = None) -> dict[str, Any]:
    """Per-engine GPU/CPU reservation, torch threads, trial CPUs and the concurrency bound, on ``cpus``
    (default: the cluster's). Without a GPU the engines share the CPUs the trials leave, rounded down to
    1/1000 CPU so that engines and trials always fit together. Threads follow the cores, not that reservation
    (trials mostly wait on the engines): the CPUs over the engines, rounded down, at least 1."""
    cluster_cpus, gpus = cluster_resources()
    cpus = cluster_cpus if cpus is None else cpus
    r = spec.resources
    slots = n_engines * r.slots_per_engine
    want_gpu = spec.engine.device != "cpu" and gpus >= 1
    if want_gpu:
        engine_cpus = r.engine_cpus if r.engine_cpus is not None else 1.0
        num_gpus = 1.0
    else:
        num_gpus = 0.0
        free = max(cpus - slots * r.trial_cpus, 0.1 * n_engines)
        engine_cpus = r.engine_cpus if r.engine_cpus is not None else free / max(n_engines, 1)
    engine_cpus = math.floor(engine_cpus * 1000) / 1000
    cores = int(engine_cpus) if want_gpu or r.engine_cpus is not None else int(cpus // max(n_engines, 1))
    threads = r.engine_threads or max(1, cores)
    return {"num_gpus": num_gpus, "engine_cpus": engine_cpus, "threads": threads,
            "omp_wait_policy": r.omp_wait_policy, "trial_cpus": r.trial_cpus,
            "trial_threads": max(1, int(r.trial_cpus)), "max_concurrent": slots,
            "device": spec.engine.device if want_gpu or spec.engine.device == "cpu" else "cpu"}  # fmt: skip


def engine_config(spec: SweepSpec, family: Any, device: str) -> dict[str, Any]:
    """The engine actor's config for one family: the spec's backend, dtype and batch bound on ``device``."""
    return {"backend": spec.engine.backend, "model": family.base,
            "adapters": [list(a) for a in family.adapters], "device": device, "dtype": spec.engine.dtype,
            "max_batch_size": spec.engine.max_batch_size}  # None: the backend's default (fills the machine)
