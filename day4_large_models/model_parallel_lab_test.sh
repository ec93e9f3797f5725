#!/usr/bin/env bash
# The GPT lab's tensor and pipeline parallelism as a trainee runs it: on 2, 3 and 4 ranks every
# schedule (interleaved 1F1B with 2 chunks per rank, ZB-H1 on 4 stages), both cuts, the pipeline of the exercises
# TP4.6-TP4.8, tensor parallelism over 2 and 4
# ranks (with sequence parallelism over 4), tensor-parallel stages (3D without replicas), the
# windows cut over 2 and 4 context-parallel ranks (with tensor parallelism, sequence parallelism
# and stages: 4D on 8 ranks) and a
# Llama's pipeline and tensor-parallel cut train as one process accumulating the same micro-batches (the same training loss and the same
# sample from the gathered model);
# 2 pipelines of 2 stages on 4 ranks, the measured bubble of every stage, one trace with every
# rank's forwards and backwards, a checkpoint file per rank resumed as the single process
# resumes, and bad combinations refused with one message. (The exact parity, parameter by
# parameter, is common/parallel/tests/pipeline_parallel_test's and tensor_parallel_gpt_test's.)
set -uo pipefail
source "$1"  # expect, expect_trace_ranks
lab=$2

text="$TEST_TMPDIR/text"
mkdir -p "$text"
for i in $(seq 1 60); do
  printf 'The quick brown fox %d jumps over the lazy dog.\n%%\n' "$i" >>"$text/quips"
done
run=(--text-dir "$text" --context 16 --no-progress --device cpu --val-fraction 0.2
  --batch-size 2 --steps-per-epoch 4 --sample-tokens 12)
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
# The training loss and the sample (validation is dealt over the ranks, so its loss differs).
ending() {
  local out
  out=$("$@" 2>&1)
  grep -ao "train loss [0-9.]*" <<<"$out"
  grep -a -A2 "^sample" <<<"$out"
}

# `ranks flags...` train as the one-process `alone`.
expect_as_alone() {
  local alone=$1 ranks=$2
  shift 2
  local got
  got=$(ending "${mpirun[@]}" -np "$ranks" "$lab" "${run[@]}" "$@")
  if [[ -z $alone || $got != "$alone" ]]; then
    echo "FAILED: $ranks ranks with $* train otherwise than one process accumulating:"
    echo "one process: $alone"
    echo "model parallel: $got"
    exit 1
  fi
  echo "ok: $ranks ranks, $*: $(head -1 <<<"$got")"
}

alone=$(ending "$lab" "${run[@]}" --accumulate 4)
for case in "2 --pipeline-stages 2 --schedule naive" "2 --pipeline-stages 2 --schedule gpipe" \
  "2 --pipeline-stages 2 --schedule 1f1b" "4 --pipeline-stages 4 --schedule zb-h1" \
  "4 --pipeline-stages 4 --schedule 1f1b --pipeline-balance parameters" \
  "3 --pipeline-stages 3 --schedule gpipe" \
  "2 --pipeline-stages 2 --schedule interleaved --virtual-stages 2" \
  "2 --tensor-parallel 2 --accumulate 4" "4 --tensor-parallel 4 --accumulate 4" \
  "4 --tensor-parallel 4 --sequence-parallel --accumulate 4" \
  "4 --tensor-parallel 2 --pipeline-stages 2" \
  "3 --pipeline-stages 3 --schedule 1f1b --pipeline-exercises" \
  "2 --pipeline-stages 2 --schedule gpipe --pipeline-exercises" \
  "2 --context-parallel 2 --accumulate 4" "4 --context-parallel 4 --accumulate 4" \
  "4 --context-parallel 2 --tensor-parallel 2 --sequence-parallel --accumulate 4" \
  "4 --context-parallel 2 --pipeline-stages 2" \
  "8 --context-parallel 2 --tensor-parallel 2 --pipeline-stages 2"; do
  # shellcheck disable=SC2086
  expect_as_alone "$alone" $case
done
# A Llama (rotary positions) with its windows cut over 2 and 4 context-parallel ranks: each
# rank turns its two chunks by their own positions.
llama_alone=$(ending "$lab" "${run[@]}" --model llama-tiny --accumulate 4)
for case in "2 --context-parallel 2 --accumulate 4" "4 --context-parallel 4 --accumulate 4"; do
  # shellcheck disable=SC2086
  expect_as_alone "$llama_alone" $case --model llama-tiny
done
# Clipped to a global norm below every step's: the stages' and slices' gradients counted once
# each (the tied table once, a replicated LayerNorm once), as one process clips.
clipped_alone=$(ending "$lab" "${run[@]}" --accumulate 4 --clip-grad-norm 0.5)
if [[ $clipped_alone == "$alone" ]]; then
  echo "FAILED: --clip-grad-norm 0.5 trains as without clipping: $alone"
  exit 1
fi
for case in "2 --pipeline-stages 2 --schedule 1f1b" "4 --tensor-parallel 2 --pipeline-stages 2"; do
  # shellcheck disable=SC2086
  expect_as_alone "$clipped_alone" $case --clip-grad-norm 0.5
done
# A Llama's pipeline (its output layer tied to the first stage's table) and its heads over 2
# tensor-parallel ranks (a key/value head each, with its 2 query heads).
llama_alone=$(ending "$lab" "${run[@]}" --model llama-tiny --accumulate 4)
expect_as_alone "$llama_alone" 2 --model llama-tiny --pipeline-stages 2 --schedule 1f1b
expect_as_alone "$llama_alone" 2 --model llama-tiny --tensor-parallel 2 --accumulate 4
expect 0 "every layer cut over 2 tensor-parallel ranks x 2 data-parallel replicas" \
  "${mpirun[@]}" -np 4 "$lab" "${run[@]}" --tensor-parallel 2 --test --test-nsteps 2

out=$("${mpirun[@]}" -np 4 "$lab" "${run[@]}" --pipeline-stages 2 --schedule gpipe 2>&1)
for line in "2-stage pipeline \(gpipe, 4 micro-batches, cut by layers: blocks 0-1 \| 2-3\) x 2 data-parallel pipelines" \
  "formula \(p-1\)/\(m\+p-1\) 0\.200" \
  "stage 0: 0\.[0-9]+ measured, at most 4 micro-batch\(es\) of activations held" \
  "stage 1: 0\.[0-9]+ measured, at most 4 micro-batch\(es\) of activations held"; do
  if ! grep -qE -- "$line" <<<"$out"; then
    echo "FAILED: 2 pipelines of 2 stages on 4 ranks do not print '$line':"
    echo "$out"
    exit 1
  fi
done
echo "ok: 2 pipelines of 2 stages on 4 ranks, GPipe's bubble measured on both stages"
expect 0 "at most 2 micro-batch(es) of activations held" "${mpirun[@]}" -np 2 "$lab" \
  "${run[@]}" --pipeline-stages 2 --schedule 1f1b
# ZB-H1's bubble formula depends on the passes' lengths: the report gives it for the measured ones.
expect 0 "for the measured passes (F " "${mpirun[@]}" -np 2 "$lab" "${run[@]}" \
  --pipeline-stages 2 --schedule zb-h1

# --profile: one trace with both stages' forwards and backwards of micro-batch 0; --timeline: the
# last step as a PNG (its pixels are //common/plot:timeline_chart_test's).
expect 0 "events per rank written to" "${mpirun[@]}" -np 2 "$lab" "${run[@]}" \
  --pipeline-stages 2 --test --test-nsteps 3 --profile "$TEST_TMPDIR/pipeline.json" \
  --timeline "$TEST_TMPDIR/timeline.png"
if [[ $(head -c 4 "$TEST_TMPDIR/timeline.png" | tail -c 3) != PNG ]]; then
  echo "FAILED: --timeline wrote no PNG"
  exit 1
fi
echo "ok: --timeline wrote a PNG"
expect_trace_ranks "$TEST_TMPDIR/pipeline.json" "0 1 " 'F0","ph":"X"' 'B0","ph":"X"'

# A checkpoint file per rank: one epoch saved, resumed to two, ends as one process does.
resumed() {
  local name=$1
  shift
  "$@" --epochs 1 --chkpt "$TEST_TMPDIR/$name.ckpt" >/dev/null 2>&1
  ending "$@" --epochs 2 --resume "$TEST_TMPDIR/$name.ckpt"
}
alone_resumed=$(resumed alone "$lab" "${run[@]}" --accumulate 4)
piped_resumed=$(resumed piped "${mpirun[@]}" -np 2 "$lab" "${run[@]}" --pipeline-stages 2)
if [[ -z $alone_resumed || $piped_resumed != "$alone_resumed" ||
  ! -f $TEST_TMPDIR/piped.rank1-of-2.ckpt ]]; then
  echo "FAILED: 2 stages resumed from their checkpoint files end otherwise than one process:"
  echo "one process: $alone_resumed"
  echo "pipeline: $piped_resumed"
  exit 1
fi
echo "ok: 2 stages, a checkpoint file per stage, resumed as one process: $(head -1 <<<"$piped_resumed")"
sliced_resumed=$(resumed sliced "${mpirun[@]}" -np 2 "$lab" "${run[@]}" --tensor-parallel 2 \
  --accumulate 4)
if [[ $sliced_resumed != "$alone_resumed" || ! -f $TEST_TMPDIR/sliced.rank1-of-2.ckpt ]]; then
  echo "FAILED: 2 tensor-parallel ranks resumed from their checkpoint files end otherwise:"
  echo "one process: $alone_resumed"
  echo "tensor parallel: $sliced_resumed"
  exit 1
fi
echo "ok: 2 tensor-parallel ranks, a checkpoint file per rank, resumed as one process"
expect 1 "pipeline_balance" "${mpirun[@]}" -np 2 "$lab" "${run[@]}" --pipeline-stages 2 \
  --pipeline-balance parameters --epochs 2 --resume "$TEST_TMPDIR/piped.ckpt"

expect 1 "error: --context-parallel 3 cuts each window into 6 chunks (2 per rank); a --context of 16 does not divide" \
  "${mpirun[@]}" -np 3 "$lab" "${run[@]}" --context-parallel 3
# A checkpoint records its dp x cp x tp x pp split: another split of the same ranks is refused
# with both named.
expect 0 "epoch 1" "${mpirun[@]}" -np 2 "$lab" "${run[@]}" --context-parallel 2 --epochs 1 \
  --chkpt "$TEST_TMPDIR/cp.ckpt"
expect 1 "is of grid dp 1 x cp 2 x tp 1 x pp 1, not dp 1 x tp 2 x pp 1" "${mpirun[@]}" -np 2 \
  "$lab" "${run[@]}" --tensor-parallel 2 --epochs 2 --resume "$TEST_TMPDIR/cp.ckpt"
expect 0 "resumed from" "${mpirun[@]}" -np 2 "$lab" "${run[@]}" --context-parallel 2 --epochs 2 \
  --resume "$TEST_TMPDIR/cp.ckpt"
expect 1 "error: --context-parallel 2 x --tensor-parallel 1 x --pipeline-stages 1 does not divide the 3 ranks" \
  "${mpirun[@]}" -np 3 "$lab" "${run[@]}" --context-parallel 2
expect 1 "they do not combine with --sharding zero1" \
  "${mpirun[@]}" -np 2 "$lab" "${run[@]}" --context-parallel 2 --sharding zero1
expect 1 "error: --tensor-parallel 1 x --pipeline-stages 2 does not divide the 3 ranks of this run" \
  "${mpirun[@]}" -np 3 "$lab" "${run[@]}" --pipeline-stages 2
expect 1 "error: --tensor-parallel 2 x --pipeline-stages 2 does not divide the 2 ranks of this run" \
  "${mpirun[@]}" -np 2 "$lab" "${run[@]}" --pipeline-stages 2 --tensor-parallel 2
expect 1 "error: --tensor-parallel 3 does not split gpt-tiny's 4 heads and 256-token vocabulary" \
  "$lab" "${run[@]}" --tensor-parallel 3
expect 1 "error: --tensor-parallel cuts the blocks' layers; it does not combine with --checkpoint-activations" \
  "$lab" "${run[@]}" --tensor-parallel 2 --checkpoint-activations
expect 1 "error: --tensor-parallel must be at least 1" "$lab" "${run[@]}" --tensor-parallel 0
expect 1 "error: --context-parallel must be at least 1" "$lab" "${run[@]}" --context-parallel 0
expect 1 "error: --sequence-parallel cuts the activations between tensor-parallel layers" "$lab" \
  "${run[@]}" --sequence-parallel
expect 1 "error: --sequence-parallel cuts windows of 18 tokens over --tensor-parallel 4 ranks" \
  "$lab" --text-dir "$text" --context 18 --device cpu --tensor-parallel 4 --sequence-parallel
expect 1 "error: --pipeline-stages 5 x --virtual-stages 1 cuts gpt-tiny's 4 blocks into stages of none" "$lab" \
  "${run[@]}" --pipeline-stages 5
expect 1 "error: --tensor-parallel, --context-parallel and --pipeline-stages average the replicas' gradients" "$lab" \
  "${run[@]}" --tensor-parallel 2 --sharding zero3
expect 1 "error: --pipeline-stages accumulates over its --micro-batches" "$lab" "${run[@]}" \
  --pipeline-stages 2 --accumulate 2
expect 1 "error: the memory estimate covers data and context parallelism" "$lab" "${run[@]}" \
  --pipeline-stages 2 --estimate-only
expect 1 "error: --pipeline-stages, --micro-batches and --virtual-stages must be at least 1" "$lab" "${run[@]}" \
  --micro-batches 0
expect 105 "--schedule" "$lab" "${run[@]}" --pipeline-stages 2 --schedule zigzag
expect 1 "error: --pipeline-exercises runs your TP4.6-TP4.8 in a pipeline of --pipeline-stages 2 or more with --schedule gpipe or 1f1b (got 2 stages, --schedule interleaved)" \
  "$lab" "${run[@]}" --pipeline-stages 2 --schedule interleaved --virtual-stages 2 --pipeline-exercises
expect 1 "error: --pipeline-exercises runs your TP4.6-TP4.8 in a pipeline of --pipeline-stages 2 or more" \
  "$lab" "${run[@]}" --pipeline-exercises
expect 1 "error: --timeline draws the stages of a pipeline" "$lab" "${run[@]}" \
  --timeline "$TEST_TMPDIR/t.png"
for flag in "--micro-batches 8" "--schedule gpipe" "--pipeline-balance compute"; do
  # shellcheck disable=SC2086
  expect 1 "error: --micro-batches, --schedule, --virtual-stages and --pipeline-balance shape a pipeline" \
    "$lab" "${run[@]}" $flag
done
expect 1 "--timeline" "$lab" "${run[@]}" --pipeline-stages 2 --timeline "$TEST_TMPDIR/no/t.png"
expect 1 "error: --schedule interleaved runs 2 or more --virtual-stages per rank" "$lab" \
  "${run[@]}" --pipeline-stages 2 --schedule interleaved
expect 1 "error: --pipeline-stages 2 x --virtual-stages 3 cuts gpt-tiny's 4 blocks" "$lab" \
  "${run[@]}" --pipeline-stages 2 --schedule interleaved --virtual-stages 3
expect 1 "error: the interleaved schedule needs at least 2 virtual stages per rank (got 2) and \
micro-batches in multiples of the 2 stages (got 3)" "${mpirun[@]}" -np 2 "$lab" "${run[@]}" \
  --pipeline-stages 2 --schedule interleaved --virtual-stages 2 --micro-batches 3
