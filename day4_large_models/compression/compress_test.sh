#!/usr/bin/env bash
# `compress distill`, `quantize` and `prune` as trainees meet them: a network trained by day 1's
# lab and saved with --chkpt is distilled into tinynet, with the baseline from the labels alone
# and the comparison table; quantized to int8 with both calibrations (the folded f32 network
# must score what the trained one does); pruned globally and 2:4, the sparsity measured in the
# weights after fine-tuning, with the plot. The untouched trainee copy stops at TODO TP4.19 /
# TP4.20 / TP4.21 (exit 3); a missing or mismatched network, bad values (an empty list of
# sparsities) and an unwritable --plot (before any fine-tuning) end with one message.
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
expect 3 "TODO TP4.19" "$trainee" distill --teacher "$teacher" "${data[@]}"
# The exercise before the long work: --baseline trains nothing before TP4.19's TODO.
out=$("$trainee" distill --teacher "$teacher" "${data[@]}" --baseline 2>&1)
if [[ $? -ne 3 ]] || grep -q "from the labels alone" <<<"$out"; then
  echo "FAILED: distill --baseline trained its baseline before TODO TP4.19:"
  echo "$out"
  exit 1
fi

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
expect 1 "compress distill trains in f32: --amp and --amp-dtype do not apply" "$solution" \
  distill --teacher "$teacher" "${data[@]}" --amp
expect 1 "compress prune trains in f32: --amp and --amp-dtype do not apply" "$solution" \
  prune --trained "$teacher" "${data[@]}" --amp-dtype f16

quantized=$TEST_TMPDIR/quantize.out
expect 0 "| smallnet int8, 99.9th percentile |" "$solution" quantize --trained "$teacher" \
  "${data[@]}" --percentile 99.9 --calibration-batches 2 --timing-passes 1
"$solution" quantize --trained "$teacher" "${data[@]}" --calibration-batches 2 \
  --timing-passes 1 >"$quantized" 2>&1
as_trained=$(grep -F "| smallnet f32 as trained |" "$quantized" | cut -d'|' -f3)
folded=$(grep -F "| smallnet f32, batch norm folded, fused |" "$quantized" | cut -d'|' -f3)
if [[ -z $as_trained || $as_trained != "$folded" ]]; then
  echo "FAILED: folding changed the accuracy ('$as_trained' -> '$folded'):"
  cat "$quantized"
  exit 1
fi
echo "ok: the folded f32 network scores ${folded// /}, as trained"
expect 0 "layer 4, linear 128 -> 10: inputs up to" cat "$quantized"
expect 0 "| smallnet int8, min/max |" cat "$quantized"
expect 3 "TODO TP4.20" "$trainee" quantize --trained "$teacher" "${data[@]}"
expect 1 "--trained $teacher is a smallnet checkpoint, not --model tinynet" "$solution" \
  quantize --trained "$teacher" --model tinynet "${data[@]}"
expect 1 "--percentile must be in (0, 100], got 0" "$solution" quantize --trained "$teacher" \
  "${data[@]}" --percentile 0
expect 1 "--calibration-batches must be positive, got 0" "$solution" quantize \
  --trained "$teacher" "${data[@]}" --calibration-batches 0
expect 105 "--model: resnet18 not in {smallnet,tinynet}" "$solution" quantize \
  --trained "$teacher" "${data[@]}" --model resnet18
expect 106 "--trained is required" "$solution" quantize "${data[@]}"

# smallnet's 2:4 row: every weight but the first convolution's 288 (rows of 9) loses half.
plot=$TEST_TMPDIR/pruning.png
expect 0 "| global 60% | 60.00% |" "$solution" prune --trained "$teacher" "${data[@]}" \
  --sparsities 0.6 --plot "$plot"
expect 0 "| 2:4 | 49.85% |" "$solution" prune --trained "$teacher" "${data[@]}" --sparsities 0.6
expect 0 "0.weight stays dense: its rows do not divide by 4" "$solution" prune \
  --trained "$teacher" "${data[@]}" --sparsities 0.6
if ! [[ $(head -c 8 "$plot" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]; then
  echo "FAILED: no PNG at $plot"
  exit 1
fi
echo "ok: $plot is a PNG"
expect 0 "| global 30% | 30.00% |" "$trainee" prune --trained "$teacher" "${data[@]}" \
  --sparsities 0.3 --no-two-four
expect 3 "TODO TP4.21" "$trainee" prune --trained "$teacher" "${data[@]}" --sparsities 0.3
# The exercise before the long work: no global sparsity pruned and fine-tuned before TP4.21's TODO.
out=$("$trainee" prune --trained "$teacher" "${data[@]}" --sparsities 0.3 2>&1)
if [[ $? -ne 3 ]] || grep -q "^-- global" <<<"$out"; then
  echo "FAILED: prune fine-tuned a global sparsity before TODO TP4.21:"
  echo "$out"
  exit 1
fi
expect 1 "--sparsities are fractions in [0, 1), got 1" "$solution" prune --trained "$teacher" \
  "${data[@]}" --sparsities 0.5,1
expect 105 "an empty fraction: give a list such as 0.5,0.9" "$solution" prune \
  --trained "$teacher" "${data[@]}" --sparsities ''
expect 1 "--plot $TEST_TMPDIR/none/p.png: folder $TEST_TMPDIR/none does not exist" "$solution" \
  prune --trained "$teacher" "${data[@]}" --sparsities 0.3 --plot "$TEST_TMPDIR/none/p.png"
expect 1 "--chkpt and --resume do not apply" "$solution" prune --trained "$teacher" \
  "${data[@]}" --chkpt "$TEST_TMPDIR/pruned.ckpt"
expect 106 "--trained is required" "$solution" prune "${data[@]}"
expect 106 "A subcommand is required" "$solution"
