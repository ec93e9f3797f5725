#!/usr/bin/env bash
# bench/scaling.sh on tiny runs: a table row per rank count with the one-rank reference at
# 1.00x and 100%, weak scaling's images growing with the ranks, and bad options refused with one
# message.
set -uo pipefail
source "$1"  # expect
scaling=$2
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE  # not shared by the ranks
tiny=(--ranks "1 2" --images 128 --batch 32 --threads 1 --out "$TEST_TMPDIR/scaling")
expect 0 "| 1 | 128 | 32 |" "$scaling" --lab day2 --mode strong "${tiny[@]}"
expect 0 "| 1.00x | 100% |" "$scaling" --lab day3 --mode strong "${tiny[@]}"
expect 0 "| 2 | 256 | 32 |" "$scaling" --lab day3 --mode weak "${tiny[@]}"
expect 0 "| 2 | 128 | 16 |" "$scaling" --lab day2 --mode strong "${tiny[@]}"
expect 1 "--mode must be strong or weak" "$scaling" --mode sideways
expect 1 "--batch 33 does not divide over 2 ranks" "$scaling" --ranks "1 2" --batch 33 \
  --out "$TEST_TMPDIR/scaling"
expect 1 "--ranks must start at 1" "$scaling" --ranks "2 4"
