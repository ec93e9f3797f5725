#!/usr/bin/env bash
# Day 4's steps never wait for the device after the first, on the simulated accelerator of each
# of 2 ranks: GPT and Llama under DDP, ZeRO 1-3 and the FSDP strategies, tensor and sequence
# parallelism (the vocabulary slice's rows remapped on the device), every pipeline schedule (the
# loss broadcast from the last stage, never read), context parallelism, clipping with
# accumulation, the optimizer in backward (f16's two passes too), 1-bit Adam's compressed steps, bf16 gathers; ViT and
# CoAtNet. (--cpu-offload waits by design: the optimizer's step runs on the host, on the
# gradients the device sent.)
set -uo pipefail
source "$1"  # expect
solution=$2
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE  # not shared by the ranks
lab=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 2
  "$solution" --test --test-nsteps 8 --log-every 4 --no-progress --batch-size 4 --device sim)
run=("${lab[@]}" --sample-tokens 0)

expect_wait_free "${run[@]}"
for sharding in zero1 zero2 zero3 shard-grad-op no-shard; do
  expect_wait_free "${run[@]}" --sharding "$sharding"
done
expect_wait_free "${run[@]}" --sharding hybrid-shard --shard-group-size 1
expect_wait_free "${run[@]}" --amp --sharding zero3 --param-dtype bf16 --forward-prefetch
# f16's loss scaler: the unscale, the ranks' agreement on an overflow and the skip on the device.
expect_wait_free "${run[@]}" --amp --amp-dtype f16 --sharding zero3 --param-dtype f16
expect_wait_free "${run[@]}" --amp --amp-dtype f16 --pipeline-stages 2
expect_wait_free "${run[@]}" --tensor-parallel 2 --sequence-parallel
for schedule in naive gpipe 1f1b zb-h1; do
  expect_wait_free "${run[@]}" --pipeline-stages 2 --schedule "$schedule"
done
expect_wait_free "${run[@]}" --pipeline-stages 2 --schedule interleaved --virtual-stages 2
expect_wait_free "${run[@]}" --pipeline-stages 2 --pipeline-exercises  # TP4.6-TP4.8's pipeline
expect_wait_free "${run[@]}" --context-parallel 2
expect_wait_free "${run[@]}" --clip-grad-norm 0.5 --accumulate 2 --checkpoint-activations
expect_wait_free "${run[@]}" --optimizer-in-backward --accumulate 2
expect_wait_free "${run[@]}" --optimizer-in-backward --amp --amp-dtype f16  # its two passes
expect_wait_free "${run[@]}" --optimizer onebit-adam --freeze-step 3
expect_wait_free "${run[@]}" --optimizer onebit-lamb --freeze-step 3 --exp-avg-mask
expect_wait_free "${run[@]}" --model llama-tiny --tensor-parallel 2
for model in vit-micro coatnet-micro; do
  expect_wait_free "${lab[@]}" --model "$model" --test-subset 64
done
expect_wait_free "${lab[@]}" --model vit-micro --test-subset 64 --pipeline-stages 2
