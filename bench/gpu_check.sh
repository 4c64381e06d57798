#!/usr/bin/env bash
# The GPU check (bench/gpu_check.py): first says which packages are missing, then runs it from the repo root
# with PYTHONPATH = that root (railsweep need not be installed).
#
#   bash bench/gpu_check.sh pack [--world DIR | --preset mini] [--family llama]   # here: writes .gpu_check/
#   bash bench/gpu_check.sh [--device cuda] [--questions 100] [--m 20] [...]      # on the GPU machine
#
# Everything after `pack` goes to `gpu_check.py pack`, anything else to `gpu_check.py run` (--help lists them).
# With $OUT set and no --out given, the run's JSON is also written to $OUT/gpu_check.json.
# PYTHON picks the interpreter (default python3). Exit: 0 done, 2 a bad option, 3 a package or CUDA missing.
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
has_out=0
prev=
for a in "$@"; do
    [[ "$prev" == --device ]] && device="$a"
    [[ "$a" == --device=* ]] && device="${a#--device=}"
    [[ "$a" == --out || "$a" == --out=* ]] && has_out=1
    prev="$a"
done
[[ "$mode" == pack ]] && device=cpu

# Which of the packages the check imports are there (by metadata, importing nothing), and CUDA if asked.
"$PY" - "$device" <<'EOF' || exit 3
import sys
from importlib import metadata

need = ("torch", "transformers", "peft", "tokenizers", "safetensors", "numpy", "pyyaml")
found, missing = {}, []
for name in need:
    try:
        found[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        missing.append(name)
print("gpu_check: python " + sys.version.split()[0] + "; " + ", ".join(f"{k} {v}" for k, v in found.items()))
if missing:
    print(f"gpu_check: missing: {', '.join(missing)} (carry their wheels: docs/bench.md, 'The GPU check')")
    sys.exit(1)
if sys.argv[1].startswith("cuda"):
    import torch

    if not torch.cuda.is_available():
        print(f"gpu_check: --device {sys.argv[1]}: torch {torch.__version__} sees no CUDA device "
              f"(built for CUDA {torch.version.cuda})")
        sys.exit(1)
    print(f"gpu_check: {torch.cuda.get_device_name(0)}, CUDA {torch.version.cuda}")
EOF

extra=()
if [[ "$mode" == run && -n "${OUT:-}" && "$has_out" == 0 ]]; then
    extra=(--out "$OUT/gpu_check.json")
fi
exec "$PY" bench/gpu_check.py "$mode" "$@" "${extra[@]}"
