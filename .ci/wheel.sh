#!/usr/bin/env bash
# CI: railsweep installs anywhere. Steps:
#   1. build the wheel from this checkout (`python -m build --wheel`, the dev extra's `build`);
#   2. install it into a fresh venv outside the checkout (torch first, the CPU build; pip's cache is reused);
#   3. from a directory outside the checkout, run `railsweep demo --preset smoke` and `railsweep sweep --preset
#      smoke` (presets from the package data; a private Ray head started by that venv, token file, ports, MLflow
#      run dir and Ray temp dir all under one work dir);
#   4. stop that Ray head (only its own processes, found by the private temp dir) and the MLflow server.
# Env: BUILD_PY (a python with `build`; default .venv/bin/python), PY (makes the venv; default python3),
# RAILSWEEP_WHEEL_VENV (reuse this venv instead of a fresh one: quicker local reruns).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BUILD_PY=${BUILD_PY:-$REPO/.venv/bin/python}
PY=${PY:-python3}
WORK=$(mktemp -d /tmp/rsw-whl.XXXX)  # short: Ray's unix sockets live under it
VENV=${RAILSWEEP_WHEEL_VENV:-$WORK/venv}
RAYTMP=$WORK/r

cleanup() {
  # The private head's processes (some renamed `ray::...`) share the process group of its gcs_server, whose
  # command line carries the private temp dir; `mlflow server` runs in its own process group too.
  local pid groups=""
  for pid in $(pgrep -f -- "$RAYTMP/" || true) $(pgrep -f -- "--port ${MLFLOW_PORT:-none} " || true); do
    groups="$groups $(ps -o pgid= -p "$pid" | tr -d ' ')"
  done
  for sig in TERM KILL; do
    for pid in $(echo "$groups" | tr ' ' '\n' | sort -u); do kill -s "$sig" -- "-$pid" 2>/dev/null || true; done
    [ "$sig" = TERM ] && sleep 3
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "[wheel] 1. build"
"$BUILD_PY" -m build --wheel --outdir "$WORK/dist" "$REPO" >"$WORK/build.log" 2>&1 || { cat "$WORK/build.log"; exit 1; }
WHEEL=$(ls "$WORK"/dist/railsweep-*.whl)
python3 - "$WHEEL" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
presets = sorted(n for n in names if n.startswith("railsweep/sweep/spec/presets/"))
assert "railsweep/sweep/spec/presets/smoke.yaml" in presets, presets
assert not [n for n in names if n.startswith(("sweeps/", "tests/"))], "the wheel carries scripts or tests"
print(f"[wheel] {sys.argv[1].rsplit('/', 1)[-1]}: {len(names)} files, presets {[p.rsplit('/', 1)[-1] for p in presets]}")
PY

echo "[wheel] 2. install into $VENV"
test -x "$VENV/bin/python" || "$PY" -m venv "$VENV"
"$VENV/bin/pip" install -q torch==2.13.0
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$WHEEL"
"$VENV/bin/pip" install -q "$WHEEL"

echo "[wheel] 3. smoke demo and sweep from outside the checkout"
mkdir -p "$WORK/run" "$RAYTMP"
cd "$WORK/run"
free_port() { "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
MLFLOW_PORT=$(free_port)
DASH_PORT=$(free_port)
export RAY_TMPDIR=$RAYTMP RAY_AUTH_TOKEN_PATH=$WORK/ray_token PATH="$VENV/bin:$PATH"
unset PYTHONPATH RAY_ADDRESS RAY_API_SERVER_ADDRESS
"$VENV/bin/python" - <<'PY'
import pathlib, railsweep
where = pathlib.Path(railsweep.__file__).resolve()
assert "site-packages" in where.parts, f"railsweep imported from {where}, not from the installed wheel"
print(f"[wheel] railsweep {railsweep.__version__} from {where.parent}")
PY
ports=(--mlflow-port "$MLFLOW_PORT" --dashboard-port "$DASH_PORT" --run-dir "$WORK/run/mlflow")
"$VENV/bin/railsweep" demo --preset smoke "${ports[@]}"
"$VENV/bin/railsweep" sweep --preset smoke --table 1 "${ports[@]}"
echo "[wheel] ok: the installed wheel ran the smoke demo and sweep"
