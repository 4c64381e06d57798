"""Shared fixtures: a real tiny model, the baseline strategies' tiny world served by an engine, and the real services of the sweep tests (the smoke miniature world, a
local Ray head and an `mlflow server` on 127.0.0.1), each made once per test session and only when asked for."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest
import torch

from railsweep.testing import make_tiny_model

torch.set_num_threads(1)
# Ray as railsweep runs it: token authentication on both sides, every port on 127.0.0.1
# (railsweep.services), with the tests' own token, so no test reads or writes ~/.ray/auth_token or reaches a
# Ray head that something else left running on this machine.
os.environ.update({"RAY_AUTH_MODE": "token", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"})
_token_dir = tempfile.mkdtemp(prefix="railsweep-test-ray-")
atexit.register(shutil.rmtree, _token_dir, ignore_errors=True)
os.environ["RAY_AUTH_TOKEN_PATH"] = os.path.join(_token_dir, "auth_token")
for _var in ("RAY_AUTH_TOKEN", "RAY_ADDRESS", "RAY_API_SERVER_ADDRESS"):
    os.environ.pop(_var, None)
os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"


def pytest_configure(config):
    from railsweep.services.tokens import ensure_ray_token

    ensure_ray_token()  # the tests' token file, mode 0600


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A tiny random llama (word-level tokenizer, 2 layers, hidden 64) saved with save_pretrained."""
    return make_tiny_model(tmp_path_factory.mktemp("tiny") / "llama", family="llama", seed=0)


@pytest.fixture(scope="module")
def world_engine(tmp_path_factory):
    """A transformers engine (CPU, float32) on the baseline strategies' tiny world (tests/baselines_world.py):
    a peaked tiny llama with LoRA adapters "co" and "cl"; one per test module."""
    from baselines_world import make_world

    from railsweep.engines.transformers_engine import TransformersEngine

    base, adapters = make_world(tmp_path_factory.mktemp("world"))
    eng = TransformersEngine(base, adapters, device="cpu", dtype="float32")
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def smoke_world():
    from railsweep.miniworld import build_world
    from railsweep.miniworld.cache import default_cache_dir

    cache = default_cache_dir()  # shared with the other suites' smoke world (content-addressed, locked)
    build_world("smoke", cache_dir=cache)
    return cache


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    from railsweep.services.mlflow_server import ensure_mlflow_server
    from railsweep.services.process import free_port

    svc = ensure_mlflow_server(tmp_path_factory.mktemp("mlflow"), port=free_port())
    yield svc.url
    svc.stop()


@pytest.fixture(scope="session")
def ray_head():
    from railsweep.services.ray_head import ensure_ray_head

    head = ensure_ray_head(num_cpus=2, block=True, isolated=True)
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


@pytest.fixture
def model_dir(tmp_path):
    """A model folder the option check accepts (its config file only): a command given it must refuse its bad
    input before it loads the model."""
    root = tmp_path / "model"
    root.mkdir()
    (root / "config.json").write_text("{}")
    return root
