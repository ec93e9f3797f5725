#!/usr/bin/env bash
# Runs a multi-rank gtest binary under mpirun on each given number of ranks (default: 2 and 4;
# CPU ranks stand in for GPUs). COURSE_TEST_MAX_RANKS, where set, leaves larger worlds to
# another run (the sanitised stage's, .bazelrc). Arguments that are not rank counts (what
# `bazel test --test_arg=...` appends, e.g. --gtest_filter=...) go to the binary on every run.
#   mpirun_test.sh BINARY [RANKS...] [BINARY ARGUMENTS...]
set -euo pipefail
binary=$1
shift
ranks_list=() binary_args=()
for arg in "$@"; do
  if [[ $arg =~ ^[0-9]+$ ]]; then
    ranks_list+=("$arg")
  else
    binary_args+=("$arg")
  fi
done
((${#ranks_list[@]})) || ranks_list=(2 4)
# One exit marker and one XML report per test, not per rank: the ranks must not share Bazel's.
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE
max_ranks=${COURSE_TEST_MAX_RANKS:-0}
for ranks in "${ranks_list[@]}"; do
  if ((max_ranks > 0 && ranks > max_ranks)); then
    echo "== $ranks ranks: left out (COURSE_TEST_MAX_RANKS=$max_ranks)"
    continue
  fi
  echo "== $ranks ranks"
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
    -x OMP_NUM_THREADS=1 "$binary" "${binary_args[@]}"
done
