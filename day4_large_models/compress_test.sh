#!/usr/bin/env bash
# `compress distill` as trainees meet it: a teacher trained by day 1's lab and saved with
# --chkpt is loaded, evaluated and distilled into tinynet, with the baseline from the labels
# alone and the comparison table; the untouched trainee copy stops at TODO TP4.15 (exit 3); a
# missing or mismatched teacher and bad temperatures or weights end with one message.
set -uo pipefail
source "$1"  # expect
trainee=$2
solution=$3
day1=$4
data=(--synthetic 256 --batch-size 32 --device cpu --no-progress --num-workers 1)
teacher=$TEST_TMPDIR/teacher.ckpt

expect 0 "test accuracy" "$day1" "${data[@]}" --chkpt "$teacher"
expect 0 "| tinynet distilled (T 2, alpha 0.5) | 6274 |" "$solution" distill --teacher "$teacher" \
  "${data[@]}" --baseline --temperature 2 --alpha 0.5
expect 0 "| tinynet from the labels | 6274 |" "$solution" distill --teacher "$teacher" \
  "${data[@]}" --baseline
expect 0 "teacher smallnet ($teacher): 94186 parameters" "$solution" distill \
  --teacher "$teacher" "${data[@]}" --model smallnet --test --test-nsteps 3
expect 3 "TODO TP4.15" "$trainee" distill --teacher "$teacher" "${data[@]}"

expect 1 "is a smallnet checkpoint, not --teacher-model tinynet" "$solution" distill \
  --teacher "$teacher" --teacher-model tinynet "${data[@]}"
expect 1 "$TEST_TMPDIR/none.ckpt" "$solution" distill --teacher "$TEST_TMPDIR/none.ckpt" \
  "${data[@]}"
expect 1 "--temperature must be positive, got 0" "$solution" distill --teacher "$teacher" \
  "${data[@]}" --temperature 0
expect 1 "--alpha must be in [0, 1], got 1.5" "$solution" distill --teacher "$teacher" \
  "${data[@]}" --alpha 1.5
expect 1 "--metrics $TEST_TMPDIR/no/m.jsonl: folder $TEST_TMPDIR/no does not exist" "$solution" \
  distill --teacher "$teacher" "${data[@]}" --baseline --metrics "$TEST_TMPDIR/no/m.jsonl"
expect 106 "--teacher is required" "$solution" distill "${data[@]}"
expect 106 "A subcommand is required" "$solution"
