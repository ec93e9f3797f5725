#!/usr/bin/env bash
# Runs every test: a check that no two sources compiled in one group name a local function alike
# (tools/cc/unique_local_names.sh); a check that the documents name only paths and Bazel labels
# that exist (tools/labsheet/doc_references.sh); a check that the day-1 lab builds only the
# libraries it lists (tools/cc/lab_dependencies.sh); the full build (CUDA compiled in where nvcc is
# installed; without a GPU the tests run its CPU path, as a trainee's machine does); the CPU-only build of
# every target (`--config=cpu`: only the files that see CUDA compile again, tools/cuda/cuda.bzl);
# common/'s tests (fuzz tests included) and the solutions' exercise checks of days 2-4 (the
# multi-rank ones on 2-4 ranks: a read past a rank's shard fails there even where a sum hides it)
# on the CPU-only build under AddressSanitizer and UndefinedBehaviorSanitizer; the GPU self-test's
# bundle (tools/gpu_selftest/bundle_test.sh); the class grader on a synthetic class
# (tools/grade/grade_test.sh); then the Slurm tooling, the race and multi-node jobs and the
# grader's job array on a local Slurm cluster (as root; slurm/tests/slurm_test.sh, race_test.sh,
# multinode_test.sh, tools/grade/grade_slurm_test.sh); the container image built by Podman from a
# debootstrapped Debian 12 and run (as root; container/image_test.sh: its base and packages made
# beside the stages before it, with --prepare, the rest, under a minute with this machine's Bazel
# cache, at the end).
# Ends with one summary line over all of them: "tests: N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")"

log=$(mktemp)
status=0

# phase TITLE: the next phase's title line ("== TITLE"), after the time the one before it took
# (named by its title's words up to a colon or parenthesis); without TITLE, the last one's time.
phase_name="" phase_start=$SECONDS
phase() {
  [[ -n $phase_name ]] && echo "== ($phase_name: $((SECONDS - phase_start)) s)"
  phase_start=$SECONDS phase_name=${1:-}
  phase_name=${phase_name%%[:(]*}
  phase_name=${phase_name% }
  if [[ $# -gt 0 ]]; then echo "== $1"; fi
}

# check LABEL COMMAND...: runs a check that is not a bazel test, its output kept in the log, and
# adds its line, "LABEL PASSED" or "LABEL FAILED", as bazel test does ("LABEL SKIPPED" for exit
# status 77, a check that cannot run on this machine and has said why).
check() {
  local label=$1
  shift
  "$@" 2>&1 | tee -a "$log"
  case ${PIPESTATUS[0]} in
    0) echo "$label PASSED" | tee -a "$log" ;;
    77) echo "$label SKIPPED" | tee -a "$log" ;;
    *)
      echo "$label FAILED" | tee -a "$log"
      status=1
      ;;
  esac
}

# The container image's base and packages (container/image_test.sh --prepare: downloads for the
# most part) are made beside the compiling stages; the container stage at the end waits for them.
container_log=$(mktemp)
container_prepare=""
trap '[[ -n $container_prepare ]] && kill "$container_prepare" 2>/dev/null
  rm -f "$log" "$container_log"' EXIT
if [[ $(id -u) -eq 0 ]] && command -v podman >/dev/null; then
  container/image_test.sh --prepare >"$container_log" 2>&1 &
  container_prepare=$!
fi

phase "grouped compiles: no two sources of a target name a local function alike"
check //tools/cc:unique_local_names tools/cc/unique_local_names.sh

phase "the documents: every path and Bazel label they name exists"
check //tools/labsheet:doc_references tools/labsheet/doc_references.sh

phase "the day-1 lab's first build: only the libraries tools/cc/day1_lab_libraries.txt lists"
check //tools/cc:lab_dependencies tools/cc/lab_dependencies.sh

phase "bazel test //... (CUDA: $(command -v nvcc >/dev/null && echo compiled in || echo absent))"
bazel test //... "$@" 2>&1 | tee -a "$log" || status=1

phase "bazel build --config=cpu //... (every target without CUDA)"
check //...:cpu_only_build bazel build --config=cpu //... "$@"

sanitized_checks=(//solutions/day2_ddp:check //solutions/day3_data:check
  //solutions/day4_large_models:check //solutions/day4_large_models:compress_check)
phase "bazel test --config=asan //common/... and the solutions' checks of days 2-4 (CPU-only"
echo "   build; AddressSanitizer + UndefinedBehaviorSanitizer)"
bazel test --config=asan //common/... "${sanitized_checks[@]}" "$@" 2>&1 | tee -a "$log" ||
  status=1

phase "the GPU self-test's bundle: made, unpacked in an empty folder, its CPU cases run there"
check //tools/gpu_selftest:bundle_test tools/gpu_selftest/bundle_test.sh

phase "the class grader: a synthetic class of day 2 graded, its scorecard cell by cell"
check //tools/grade:grade_test tools/grade/grade_test.sh

phase "Slurm: sbatch jobs through slurm/submit.sh, the race and multi-node jobs, the grader's"
echo "   job array, on a local cluster"
for test in slurm/tests/slurm_test slurm/tests/race_test slurm/tests/multinode_test \
  tools/grade/grade_slurm_test; do
  case $test in
    slurm/*) label="//slurm:$(basename "$test")" ;;
    *) label="//tools/grade:$(basename "$test")" ;;
  esac
  if [[ $(id -u) -ne 0 ]] || ! command -v slurmctld >/dev/null; then
    echo "$label SKIPPED (needs root and ./setup.sh's Slurm packages)" | tee -a "$log"
  else
    check "$label" "$test.sh"
  fi
done

phase "the container image: Debian 12 bootstrapped, imported into Podman, container/Containerfile"
echo "   built, the day-1 lab and quick tests run in it"
if [[ -n $container_prepare ]]; then
  wait "$container_prepare" || echo "   (its --prepare failed; made here instead)"
  echo "   made while the stages above ran (container/image_test.sh --prepare):"
  sed 's/^/   /' "$container_log"
  container_prepare=""
fi
check //container:image_test container/image_test.sh --prepared

phase
echo "== ($SECONDS s in all)"
passed=$(grep -cE '^//[^ ]+ +(\(cached\) )?PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +.*(FAILED|TIMEOUT|NO STATUS)' "$log")
echo "tests: ${passed} passed, ${failed} failed"
exit "$status"
