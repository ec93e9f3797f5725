#!/usr/bin/env bash
# Day 4's lab on the image models (the solutions' lab), on the embedded Fashion-MNIST: CoAtNet in
# both memory formats, and its step replayed as a graph; ViT on 2 ranks, DDP and ZeRO-3 ending with the same test loss and accuracy
# after a checkpoint and a resume, and so do its pipeline stages and tensor-parallel ranks against
# one process; f16 with the loss scaler against f32; the memory estimate against the measured
# peak; the language models' flags refused with one message. Runs that test do it on the first 500 test images.
set -uo pipefail
source "$1"  # expect
source "$2"  # expect_estimate_near_peak
lab=$3
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 2)
images=(--no-progress --device cpu --batch-size 8 --lr 1e-3 --test-subset 500)
expect 0 "training coatnet-micro (0.25M parameters)" "$lab" "${images[@]}" --model coatnet-micro \
  --test --test-nsteps 2
expect 0 "images/s" "$lab" "${images[@]}" --model coatnet-micro --test --test-nsteps 2 \
  --channels-last
# image_ending [launcher...] -- [flags...]: the last epoch's test loss and accuracy.
image_ending() {
  local launch=()
  while [[ $1 != -- ]]; do launch+=("$1") && shift; done
  "${launch[@]}" "$lab" "${images[@]}" --model vit-micro --steps-per-epoch 3 "${@:2}" 2>&1 |
    grep -o "test loss .*"
}
# image_resumed NAME [launcher...] -- [flags...]: the same after a checkpoint and a resume.
image_resumed() {
  image_ending "${@:2}" --chkpt "$TEST_TMPDIR/$1.ckpt" >/dev/null
  image_ending "${@:2}" --epochs 2 --resume "$TEST_TMPDIR/$1.ckpt"
}
ddp_resumed_images=$(image_resumed vit-ddp "${mpirun[@]}" --)
zero3_resumed_images=$(image_resumed vit-zero3 "${mpirun[@]}" -- --sharding zero3)
# expect_same_ending WHAT REFERENCE ENDING FILE: ENDING is REFERENCE's (not empty), FILE exists.
expect_same_ending() {
  if [[ -z $2 || $3 != "$2" || ! -f $4 ]]; then
    echo "FAILED: $1 (or $4 missing):"
    echo "reference: $2"
    echo "got: $3"
    exit 1
  fi
  echo "ok: $1: $(tail -1 <<<"$3")"
}
expect_same_ending "vit-micro resumed on 2 ranks, zero3 as DDP" "$ddp_resumed_images" \
  "$zero3_resumed_images" "$TEST_TMPDIR/vit-zero3.rank1-of-2.ckpt"
# CoAtNet's step replayed as a graph (--cuda-graphs; a recorded task graph on the CPU), channels-
# last, ends as its eager steps.
coatnet_ending() {
  "$lab" "${images[@]}" --model coatnet-micro --steps-per-epoch 3 --channels-last "$@" 2>&1 |
    grep -o "test loss .*"
}
eager_coatnet=$(coatnet_ending)
graphed_coatnet=$(coatnet_ending --cuda-graphs)
if [[ -z $eager_coatnet || $graphed_coatnet != "$eager_coatnet" ]]; then
  echo "FAILED: coatnet-micro under --cuda-graphs: '$graphed_coatnet', eager: '$eager_coatnet'"
  exit 1
fi
echo "ok: coatnet-micro's step replayed as a graph ends as eager: $eager_coatnet"
# A ViT in 2 pipeline stages over 2 micro-batches, resumed from its files (one per stage), ends
# as one process accumulating the same 2 micro-batches (a ViT has no batch norm).
piped_images=$(image_resumed vit-piped "${mpirun[@]}" -- --pipeline-stages 2 --micro-batches 2)
accumulated_images=$(image_resumed vit-accumulated -- --accumulate 2)
expect_same_ending "vit-micro in 2 stages resumed as one process accumulating" \
  "$accumulated_images" "$piped_images" "$TEST_TMPDIR/vit-piped.rank1-of-2.ckpt"
# Checkpointed blocks recompute their activations and train exactly as kept ones.
expect_same_ending "vit-micro with checkpointed blocks as with kept activations" \
  "$(image_ending --)" "$(image_ending -- --checkpoint-activations)" "$lab"
# The same with its blocks cut over 2 tensor-parallel ranks instead, accumulating on one stage.
sliced_images=$(image_resumed vit-sliced "${mpirun[@]}" -- --tensor-parallel 2 --accumulate 2)
expect_same_ending "vit-micro over 2 tensor-parallel ranks resumed as one process" \
  "$accumulated_images" "$sliced_images" "$TEST_TMPDIR/vit-sliced.rank1-of-2.ckpt"
# f16 with the loss scaler on the image models: ViT on one process, over 2 tensor-parallel ranks
# and under ZeRO-3 ends within 0.005 of f32's test loss, and the drill's inf on the last rank
# alone is skipped by every rank; so it is on 2 DDP ranks of CoAtNet's channels-last convolutions.
test_loss() { grep -m1 -oE "test loss [0-9.]+" <<<"$1" | grep -oE "[0-9.]+$"; }
for mode in "" "--tensor-parallel 2" "--sharding zero3"; do
  launcher=("${mpirun[@]}")
  [[ -z $mode ]] && launcher=()
  # shellcheck disable=SC2086
  f32=$(image_ending "${launcher[@]}" -- $mode)
  # shellcheck disable=SC2086
  f16=$(image_ending "${launcher[@]}" -- $mode --amp --amp-dtype f16)
  expect_near "$(test_loss "$f32")" "$(test_loss "$f16")" 0.005 "vit-micro f16, ${mode:-one process}"
  # shellcheck disable=SC2086
  expect 0 "loss scale 32768, 1 step(s) skipped" "${launcher[@]}" "$lab" "${images[@]}" \
    --model vit-micro --steps-per-epoch 3 $mode --amp --amp-dtype f16 --overflow-drill 2
done
expect 0 "loss scale 32768, 1 step(s) skipped" "${mpirun[@]}" "$lab" "${images[@]}" \
  --model coatnet-micro --steps-per-epoch 3 --channels-last --amp --amp-dtype f16 --overflow-drill 2
expect 0 "every layer cut over 2 tensor-parallel ranks x 2-stage pipeline" \
  "${mpirun[@]:0:7}" -np 4 "$lab" "${images[@]}" --model vit-micro --tensor-parallel 2 \
  --pipeline-stages 2 --micro-batches 2 --test --test-nsteps 2
expect 0 "2-stage pipeline (1f1b, 4 micro-batches, cut by compute: blocks " "${mpirun[@]}" "$lab" \
  "${images[@]}" --model coatnet-micro --pipeline-stages 2 --micro-batches 4 --channels-last \
  --pipeline-balance compute --test --test-nsteps 2
expect 1 "--schedule, --virtual-stages and --pipeline-balance shape a pipeline" "$lab" \
  "${images[@]}" --model coatnet-micro --pipeline-balance compute
expect 1 "--pipeline-stages 4 x --virtual-stages 2 cuts vit-micro's 4 blocks into stages of none" \
  "$lab" "${images[@]}" --model vit-micro --pipeline-stages 4 --virtual-stages 2 \
  --schedule interleaved --micro-batches 4
expect 1 "error: --tensor-parallel cuts transformer blocks (gpt-..., llama-..., vit-...); coatnet-micro" \
  "${mpirun[@]}" "$lab" "${images[@]}" --model coatnet-micro --tensor-parallel 2
expect 1 "error: --sequence-parallel cuts a language model's windows; an image model's tokens" \
  "${mpirun[@]}" "$lab" "${images[@]}" --model vit-micro --tensor-parallel 2 --sequence-parallel
expect 1 "error: --tensor-parallel 8 does not split vit-micro's 4 heads and 256-wide MLP" \
  "$lab" "${images[@]}" --model vit-micro --tensor-parallel 8
# The throughput model of the image models: CoAtNet's blocks measured and never cut over
# tensor-parallel ranks, a ViT's cut.
expect 0 "dp 2 x tp 1 x pp 4       64" "$lab" --model coatnet-0 --batch-size 128 \
  --throughput-gpus 8
expect 0 "dp 1 x tp 2 x pp 4" "$lab" --model vit-b16 --batch-size 128 --throughput-gpus 8
expect 1 "--top-p feed the language models; coatnet-micro is an image" \
  "$lab" --model coatnet-micro --context 32
expect 1 "--top-p feed the language models; vit-micro is an image" "$lab" \
  --model vit-micro --top-k 5
expect 1 "--top-p feed the language models; vit-micro is an image" "$lab" \
  --model vit-micro --synthetic-tokens 4096
expect 1 "error: --image-size 24 is too small for coatnet-0 (at least 31)" "$lab" \
  --model coatnet-0 --image-size 24
expect 1 "--test-subset feed the image models (vit-..., coatnet-...); gpt-tiny" "$lab" \
  --test-subset 32
expect 1 "error: --estimate-only and --throughput-gpus take coatnet-7 at its preset's own size" \
  "$lab" --model coatnet-7 --estimate-only --image-size 64
expect 1 "error: --data-dir /nonexistent does not exist" "$lab" "${images[@]}" --model vit-micro \
  --data-dir /nonexistent
expect 1 "error: --test-subset 10001 is more than the 10000 test images" "$lab" --no-progress \
  --device cpu --model vit-micro --test-subset 10001
# The image models' estimate, measured piece by piece, against the measured peak (within 15%),
# and CoAtNet-7's on paper (its 2.44B parameters never built whole).
for flags in coatnet-micro "coatnet-micro --channels-last" "coatnet-micro --amp --sharding zero3" \
  "coatnet-micro --checkpoint-activations" vit-micro "vit-micro --amp"; do
  # shellcheck disable=SC2086
  expect_estimate_near_peak "--model $flags" "${mpirun[@]}" "$lab" --no-progress --device cpu \
    --batch-size 16 --test --test-nsteps 2 --model $flags
done
expect 0 "ZeRO paper, mixed-precision Adam, 2.44B parameters on 8 rank(s)" "$lab" \
  --model coatnet-7 --estimate-only --estimate-ranks 8 --batch-size 1 --amp
