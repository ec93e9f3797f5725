#!/usr/bin/env bash
# The lab binaries as trainees meet them: the untouched trainee lab runs its CPU baseline and
# fails with the exercise's TODO (exit 3) only when a feature is asked for; the solutions' lab
# runs the features; bad flags end with one message and a non-zero exit, and a user's file named
# by --chkpt is never overwritten.
set -uo pipefail
source "$1"  # expect
trainee=$2
solution=$3
base=(--synthetic 64 --test --test-nsteps 2 --no-progress)
small=("${base[@]}" --batch-size 16 --device cpu)

expect 0 "training performance" "$trainee" "${small[@]}"
expect 3 "TODO TP1.3" "$trainee" "${small[@]}" --channels-last
expect 3 "TODO TP1.2" "$trainee" "${small[@]}" --amp --amp-dtype f16
expect 3 "TODO TP1.4" "$trainee" "${small[@]}" --profile "$TEST_TMPDIR/trace.json"
expect 3 "TODO TP1.5" "$trainee" "${small[@]}" --model-memory
expect 0 "training performance" "$solution" "${small[@]}" --channels-last --amp --amp-dtype f16 \
  --model-memory --profile "$TEST_TMPDIR/trace.json"
# Every image family the statically linked lab offers trains (each registers itself from its
# own library: a family dropped by the linker would be missing here), and the GPT, which day 1
# does not link, is refused by name.
for model in resnet18-cifar vit-micro coatnet-micro; do
  expect 0 "training performance" "$solution" "${small[@]}" --model "$model" --image-size 32
done
expect 105 "--model: gpt2 not in {smallnet,tinynet,resnet18-cifar" "$solution" "${small[@]}" \
  --model gpt2
expect 0 "CUDA graphs need a GPU" "$solution" "${small[@]}" --cuda-graphs
expect 0 "graph replay" "$solution" "${small[@]}" --cuda-graphs
expect 0 "graph replay" "$solution" "${small[@]}" --cuda-graphs --amp --amp-dtype f16
# On the simulated accelerator, which refuses what CUDA's capture refuses (a synchronisation, an
# event query, an allocation outside the graph's pool) as a GPU would.
expect 0 "graph replay" "$solution" "${base[@]}" --batch-size 16 --device sim --cuda-graphs \
  --amp --amp-dtype f16 --channels-last
expect 1 "error: --batch-size must be positive" "$solution" "${base[@]}" --device cpu --batch-size 0
expect 1 "error: --log-every must be positive, got 0" "$solution" "${small[@]}" --log-every 0
expect 1 "error: --image-size 2 is too small" "$solution" "${small[@]}" --image-size 2
expect 1 "error: --num-workers must be 0 or more (or -1, the default: fitted to the rank), got -2" \
  "$solution" "${small[@]}" --num-workers -2
expect 1 "does not exist" "$solution" --data-dir "$TEST_TMPDIR/none" --test --no-progress --device cpu
expect 105 "--device: unknown device 'tpu' (expected cpu, cuda, cuda:N, sim or sim:N)" "$solution" "${base[@]}" \
  --device tpu
expect 109 "--bogus" "$solution" --bogus
expect 0 "--batch-size" "$solution" --help

# A --chkpt naming a file that is not a checkpoint is refused before training and left as it was.
notes=$TEST_TMPDIR/notes.txt
echo "a trainee's notes" >"$notes"
expect 1 "--chkpt $notes is a file that is not a checkpoint: it is left as it is" "$solution" \
  "${small[@]}" --chkpt "$notes"
if [[ $(cat "$notes") != "a trainee's notes" ]]; then
  echo "FAILED: $notes was changed"
  exit 1
fi
echo "ok: $notes is left as it was"
