"""Shared fixtures: a real tiny model, and the real services of the sweep tests (the smoke miniature world, a
local Ray head and an `mlflow server` on 127.0.0.1), each made once per test session and only when asked for."""

from __future__ import annotations

import os

import pytest
import torch

from railsweep.testing import make_tiny_model

torch.set_num_threads(1)
os.environ["RAY_AUTH_MODE"] = "disabled"  # explicit on both sides (ray-mlflow-notes.md §3.2)
os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random llama (word-level tokenizer, 2 layers, hidden 64) saved with save_pretrained."""
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "llama", family="llama", seed=0)


@pytest.fixture(scope="session")
def smoke_world():
    from railsweep.miniworld import build_world
    from railsweep.miniworld.world import default_cache_dir

    cache = default_cache_dir()  # shared with the other suites' smoke world (content-addressed, locked)
    build_world("smoke", cache_dir=cache)
    return cache


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    from railsweep.sweep import local

    svc = local.ensure_mlflow_server(tmp_path_factory.mktemp("mlflow"), port=local.free_port())
    yield svc.url
    svc.stop()


@pytest.fixture(scope="session")
def ray_head():
    from railsweep.sweep import local

    head = local.ensure_ray_head(num_cpus=2, block=True, isolated=True)
    yield head
    import ray

    if ray.is_initialized():
        ray.shutdown()
    head.service.stop()


@pytest.fixture(scope="session")
def ray_client(ray_head):
    import ray

    ray.init(address=ray_head.gcs, log_to_driver=False)
    return ray
