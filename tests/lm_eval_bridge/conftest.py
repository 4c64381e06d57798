"""Tests that run lm-evaluation-harness itself. Without an importable ``lm_eval`` they are not collected (the
default venv); CI runs them for real in the second environment built by ``.ci/vllm.sh``, which installs
``lm_eval`` beside vLLM."""

import importlib.util

_spec = importlib.util.find_spec("lm_eval")
HAVE_LM_EVAL = _spec is not None and _spec.origin is not None
if not HAVE_LM_EVAL:
    collect_ignore_glob = ["test_*.py"]


def pytest_report_header(config):
    return None if HAVE_LM_EVAL else "tests/lm_eval_bridge: lm_eval is not importable here, its tests are not collected"
