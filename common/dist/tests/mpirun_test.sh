#!/usr/bin/env bash
# Runs a multi-rank gtest binary on 2 and 4 MPI ranks (CPU ranks stand in for GPUs).
set -euo pipefail
binary=$1
# One exit marker and one XML report per test, not per rank: the ranks must not share Bazel's.
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE
for ranks in 2 4; do
  echo "== $ranks ranks"
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" \
    -x OMP_NUM_THREADS=1 "$binary"
done
