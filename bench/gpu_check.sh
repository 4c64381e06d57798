#!/usr/bin/env bash
# The GPU check (bench/gpu_check.py): first says which packages are missing, then runs it from the repo root
# with PYTHONPATH = that root (railsweep need not be installed).
#
#   bash bench/gpu_check.sh pack [--world DIR | --preset mini] [--family llama]   # here: writes .gpu_check/
#   bash bench/gpu_check.sh [--device cuda] [--questions 100] [--m 20] [...]      # on the GPU machine
#
# Everything after `pack` goes to `gpu_check.py pack`, anything else to `gpu_check.py run` (--help lists them).
# With $OUT set and no --out given, the run's JSON is also written to $OUT/gpu_check.json.
# PYTHON picks the interpreter (default python3). Exit: 0 done, 2 a bad option, 3 a package or CUDA missing
# (bench/gpu_check_env.py first installs the pack's wheels of missing packages into /tmp/gpu_check_site).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false

mode=run
if [[ "${1:-}" == pack ]]; then
    mode=pack
    shift
fi
device=cuda
pack=.gpu_check
has_out=0
prev=
for a in "$@"; do
    [[ "$prev" == --device ]] && device="$a"
    [[ "$a" == --device=* ]] && device="${a#--device=}"
    [[ "$prev" == --pack ]] && pack="$a"
    [[ "$a" == --pack=* ]] && pack="${a#--pack=}"
    [[ "$a" == --out || "$a" == --out=* ]] && has_out=1
    prev="$a"
done
if [[ "$mode" == pack ]]; then
    device=cpu
    pack=/nonexistent  # packing installs nothing: what it needs must be here
fi

# The packages the check imports (installing the pack's wheels of missing ones), and CUDA if asked.
site="$("$PY" bench/gpu_check_env.py --device "$device" --pack "$pack")" || exit 3
if [[ -n "$site" ]]; then
    export PYTHONPATH="$site:$PYTHONPATH"
fi

extra=()
if [[ "$mode" == run && -n "${OUT:-}" && "$has_out" == 0 ]]; then
    extra=(--out "$OUT/gpu_check.json")
fi
exec "$PY" bench/gpu_check.py "$mode" "$@" "${extra[@]}"
