#!/usr/bin/env bash
# Runs every test: the full build (CUDA compiled in where nvcc is installed; without a GPU its
# small and medium tests, the large lab tests running once below), then the same
# tests in the CPU-only configuration, which proves every target also builds without CUDA,
# then common/'s tests (fuzz tests included) under AddressSanitizer and UndefinedBehavior-
# Sanitizer, then the Slurm tooling, the race and multi-node jobs on a local Slurm cluster (as
# root; slurm/tests/slurm_test.sh, race_test.sh, multinode_test.sh).
# Ends with one summary line over all of them: "tests: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0

# Without a GPU the CUDA build runs the CPU path, which the CPU-only pass below tests in full:
# there the end-to-end lab tests (size large) run once, in that pass.
sizes=()
if ! nvidia-smi -L >/dev/null 2>&1; then sizes=(--test_size_filters=small,medium); fi
echo "== bazel test //... (CUDA: $(command -v nvcc >/dev/null && echo compiled in || echo absent)${sizes:+; no GPU: small and medium tests})"
bazel test //... "${sizes[@]}" "$@" 2>&1 | tee -a "$log" || status=1

echo "== bazel test --config=cpu //... (CPU-only build of every target)"
bazel test --config=cpu //... "$@" 2>&1 | tee -a "$log" || status=1

echo "== bazel test --config=asan //common/... (AddressSanitizer + UndefinedBehaviorSanitizer)"
bazel test --config=asan //common/... "$@" 2>&1 | tee -a "$log" || status=1

echo "== Slurm: sbatch jobs through slurm/submit.sh, the race and multi-node jobs, on a local cluster"
for test in slurm_test race_test multinode_test; do
  if [[ $(id -u) -ne 0 ]] || ! command -v slurmctld >/dev/null; then
    echo "//slurm:$test SKIPPED (needs root and ./setup.sh's Slurm packages)" | tee -a "$log"
  elif "slurm/tests/$test.sh"; then
    echo "//slurm:$test PASSED" | tee -a "$log"
  else
    echo "//slurm:$test FAILED" | tee -a "$log"
    status=1
  fi
done

passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +.*(FAILED|TIMEOUT|NO STATUS)' "$log")
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
