#!/usr/bin/env bash
# `make test`: run every step named on the command line (make targets), each to its end whatever the others did,
# then print one line per step (ok / FAILED, exit code, minutes) and exit non-zero when any step failed.
# A step's own output goes to the terminal as it runs; its last lines are repeated under the summary when it fails.
#   MAKE  the make to run (default: make)
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS="$(mktemp -d -t railsweep-steps-XXXXXX)"
declare -a SUMMARY=() FAILED=()
for step in "$@"; do
  echo "==> make $step"
  start=$(date +%s)
  ${MAKE:-make} --no-print-directory "$step" 2>&1 | tee "$LOGS/$step.log"
  rc=${PIPESTATUS[0]}
  minutes=$(awk -v s="$(( $(date +%s) - start ))" 'BEGIN { printf "%.1f", s / 60 }')
  if [[ $rc -eq 0 ]]; then
    SUMMARY+=("$(printf '  %-10s ok       %5s min' "$step" "$minutes")")
  else
    FAILED+=("$step")
    SUMMARY+=("$(printf '  %-10s FAILED   %5s min  (exit %d; log: %s)' "$step" "$minutes" "$rc" "$LOGS/$step.log")")
  fi
done
echo
echo "make test: one line per step"
printf '%s\n' "${SUMMARY[@]}"
if [[ ${#FAILED[@]} -gt 0 ]]; then
  for step in "${FAILED[@]}"; do
    echo; echo "---- last lines of $step ----"; tail -n 15 "$LOGS/$step.log"
  done
  echo; echo "make test: FAILED"
  exit 1
fi
rm -rf "$LOGS"
echo "make test: all steps passed"
