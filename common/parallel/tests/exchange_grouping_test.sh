#!/usr/bin/env bash
# Grouped and ungrouped point-to-point exchanges on 2 MPI ranks (exchange_grouping_main.cc):
# past the eager limit (4 KiB over shared memory) an ungrouped send before a receive deadlocks
# and ends within its 3 s timeout with the communicator's message, as on NCCL; below it, it
# passes; a grouped exchange passes at every size; a ring all-reduce that the other rank never
# joins ends with the timeout's message too.
#   exchange_grouping_test.sh EXPECT_SH BINARY
set -uo pipefail
source "$1"
binary=$2
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE
run() {
  timeout 60 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 "$binary" "$@"
}
expect 0 "received 262144 elements" run --grouped 262144 3
expect 0 "received 16 elements" run --ungrouped 16 3
out=$(run --ungrouped 262144 3 2>&1)
code=$?
if [[ $code -eq 0 || $code -eq 124 ]] || ! grep -q "did not complete within 3 s" <<<"$out"; then
  echo "FAILED: an ungrouped 1 MiB exchange exited $code (expected the timeout's error):"
  echo "$out"
  exit 1
fi
echo "ok: an ungrouped 1 MiB exchange ends with the timeout's message (exit $code)"
# A 4 MiB all-reduce (the communicator's ring) that rank 1 never joins.
out=$(run --stalled-ring 1048576 3 2>&1)
code=$?
if [[ $code -eq 0 || $code -eq 124 ]] ||
  ! grep -q "ring all-reduce's step 1 of 2: .*did not complete within 3 s" <<<"$out"; then
  echo "FAILED: a ring all-reduce without rank 1 exited $code (expected the timeout's error):"
  echo "$out"
  exit 1
fi
echo "ok: a ring all-reduce without rank 1 ends with the timeout's message (exit $code)"
