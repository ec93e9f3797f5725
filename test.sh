#!/usr/bin/env bash
# Runs every test: the full build (CUDA compiled in where nvcc is installed), then the same
# tests in the CPU-only configuration, which proves every target also builds without CUDA.
# Ends with one summary line over both runs: "tests: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0

echo "== bazel test //... (CUDA: $(command -v nvcc >/dev/null && echo compiled in || echo absent))"
bazel test //... "$@" 2>&1 | tee -a "$log" || status=1

echo "== bazel test --config=cpu //... (CPU-only build of every target)"
bazel test --config=cpu //... "$@" 2>&1 | tee -a "$log" || status=1

passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +.*(FAILED|TIMEOUT|NO STATUS)' "$log")
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
