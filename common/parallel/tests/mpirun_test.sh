#!/usr/bin/env bash
# Runs a multi-rank gtest binary under mpirun on each given number of ranks (default: 2 and 4;
# CPU ranks stand in for GPUs).
#   mpirun_test.sh BINARY [RANKS...]
set -euo pipefail
binary=$1
shift
ranks_list=("${@:-2 4}")
# One exit marker and one XML report per test, not per rank: the ranks must not share Bazel's.
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE
for ranks in ${ranks_list[*]}; do
  echo "== $ranks ranks"
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
    -x OMP_NUM_THREADS=1 "$binary"
done
