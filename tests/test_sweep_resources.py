"""A sweep's resource plan: one one-thread engine per core by default, the engines' Ray reservation shares the CPUs
the trials leave, engines and trials fit the cluster together, threads follow the cores (never rounded away), and
the thread budget reaches the processes."""

from __future__ import annotations

import dataclasses
import os

import pytest
import torch

from railsweep.engines.threads import apply_thread_budget, thread_env
from railsweep.sweep.plan import resources as plan
from railsweep.sweep.spec.sections import FamilySpec
from railsweep.sweep.spec.sweep_spec import load_spec


def _plan(monkeypatch, cpus, gpus, n_engines, device="cpu", **resources):
    monkeypatch.setattr(plan, "cluster_resources", lambda: (float(cpus), float(gpus)))
    spec = load_spec("mini")
    spec = dataclasses.replace(
        spec,
        engine=dataclasses.replace(spec.engine, device=device),
        resources=dataclasses.replace(spec.resources, **resources),
    )
    return spec, plan.plan_resources(spec, n_engines)


@pytest.mark.parametrize("cpus, n_engines, threads", [(2, 3, 1), (2, 2, 1), (2, 1, 2), (16, 16, 1), (16, 3, 5)])
def test_cpu_engines_share_the_cores_and_their_threads_never_outnumber_them(
    monkeypatch, cpus, n_engines, threads
):
    spec, plan = _plan(monkeypatch, cpus, 0, n_engines)
    r = spec.resources
    assert plan["max_concurrent"] == n_engines * r.slots_per_engine
    assert n_engines * plan["engine_cpus"] + plan["max_concurrent"] * r.trial_cpus <= cpus  # all fit at once
    assert plan["threads"] == threads
    assert n_engines * plan["threads"] <= max(cpus, n_engines)
    assert n_engines * plan["threads"] > cpus - plan["threads"]  # no core left without a thread
    assert plan["omp_wait_policy"] == "PASSIVE" and plan["trial_threads"] == 1


@pytest.mark.parametrize("cpus, families, engines", [(2, 1, 2), (2, 3, 3), (4, 3, 4), (16, 3, 16)])
def test_default_plan_is_one_engine_of_one_thread_per_core(monkeypatch, cpus, families, engines):
    spec, _ = _plan(monkeypatch, cpus, 0, 1)
    names = ("llama", "neox", "gemma")[:families]
    spec = dataclasses.replace(spec, families=tuple(FamilySpec(n, f"/m/{n}", ()) for n in names))
    pending = [type("Cell", (), {"family": n})() for n in names for _ in range(3)]
    layout = plan.plan_layout(spec, pending)
    assert set(layout) == set(names) and sum(layout.values()) == engines
    assert plan.plan_resources(spec, engines)["threads"] == 1


def test_engine_cpus_and_threads_can_be_set_in_the_spec(monkeypatch):
    _, plan = _plan(monkeypatch, 16, 0, 3, engine_cpus=3.0)
    assert (plan["engine_cpus"], plan["threads"]) == (3.0, 3)
    _, plan = _plan(monkeypatch, 16, 0, 3, engine_threads=2, omp_wait_policy="ACTIVE")
    assert (plan["threads"], plan["omp_wait_policy"]) == (2, "ACTIVE")


def test_gpu_engines_hold_one_gpu_and_one_cpu_thread(monkeypatch):
    _, plan = _plan(monkeypatch, 32, 4, 4, device="auto")
    assert (plan["num_gpus"], plan["engine_cpus"], plan["threads"]) == (1.0, 1.0, 1)


def test_thread_env_sets_openmp_and_blas_threads_and_the_wait_policy():
    assert thread_env(3) == {
        "OMP_NUM_THREADS": "3",
        "MKL_NUM_THREADS": "3",
        "OPENBLAS_NUM_THREADS": "3",
        "OMP_WAIT_POLICY": "PASSIVE",
    }
    assert "OMP_WAIT_POLICY" not in thread_env(1, wait_policy=None)


def test_apply_thread_budget_sets_torch_threads_and_the_environment(monkeypatch):
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        monkeypatch.setenv(var, os.environ.get(var, "1"))  # restored afterwards
    before = torch.get_num_threads()
    try:
        assert apply_thread_budget(2) == 2 == torch.get_num_threads()
        assert os.environ["OMP_NUM_THREADS"] == "2"
    finally:
        torch.set_num_threads(before)


def test_engine_batch_is_not_the_prompts_per_call_and_not_part_of_the_sweep_id():
    spec = load_spec("mini")
    family = type("Family", (), {"base": "/m", "adapters": ()})()
    assert plan.engine_config(spec, family, "cpu")["max_batch_size"] is None  # the backend's default
    bigger = dataclasses.replace(spec, engine=dataclasses.replace(spec.engine, max_batch_size=1000))
    assert plan.engine_config(bigger, family, "cpu")["max_batch_size"] == 1000
    assert bigger.sweep_id == spec.sweep_id  # the engine's batch changes speed, not samples
