#!/usr/bin/env bash
# The course slides' DeepSpeed files run unchanged on 2 ranks (day4_large_models/configs/, byte
# for byte), each key doing what DeepSpeed does with it: ZeRO-2's buckets and overlap, the
# tutorial's batch derived from train_batch_size and its WarmupLR rising logarithmically (the
# same run as those flags written out, and not the linear one), the per-phase times of
# wall_clock_breakdown, and a tutorial-style file per key group (stage 3's fetching keys too).
set -uo pipefail
source "$1"  # expect
lab=$2
configs=day4_large_models/configs
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1 -np 2)
few=(--test --test-nsteps 3 --no-progress --device cpu --sample-tokens 0 --context 32)
text="$TEST_TMPDIR/text"
mkdir -p "$text"
for i in $(seq 1 60); do
  printf 'The quick brown fox %d jumps over the lazy dog.\n%%\n' "$i" >>"$text/quips"
done
# The validation line and the sample of a short whole run on a made-up corpus.
ending() {
  "${mpirun[@]}" "$lab" --text-dir "$text" --context 16 --val-fraction 0.2 --no-progress \
    --device cpu --steps-per-epoch 4 --sample-tokens 12 "$@" 2>&1 |
    grep -A1 -E "^(validation loss|sample)"
}
same() {  # same WHAT A B
  if [[ -z $2 || $2 != "$3" ]]; then
    echo "FAILED: $1:"
    printf '%s\n---\n%s\n' "$2" "$3"
    exit 1
  fi
  echo "ok: $1"
}

# The ZeRO-2 file of the large-model chapter, as the slides run it (-b 28).
expect 0 "zero2 over 2 rank(s) (backward prefetch pre, reduce buckets of 500000000 elements, all-gathers of at most 500000000)" \
  "${mpirun[@]}" "$lab" "${few[@]}" -b 28 --config "$configs/ds_config_zero2.json"
expect 0 "zero_optimization.contiguous_gradients true: always so in the lab" \
  "${mpirun[@]}" "$lab" "${few[@]}" --config "$configs/ds_config_zero2.json"
same "ds_config_zero2.json trains as --sharding zero2 with DeepSpeed's buckets written out" \
  "$(ending -b 4 --config "$configs/ds_config_zero2.json")" \
  "$(ending -b 4 --sharding zero2 --reduce-bucket-size 500000000 \
    --allgather-bucket-size 500000000 --lr-schedule constant --warmup-steps 0)"
same "DeepSpeed's buckets change no sum: ds_config_zero2.json trains as plain zero2" \
  "$(ending -b 4 --config "$configs/ds_config_zero2.json")" \
  "$(ending -b 4 --sharding zero2 --lr-schedule constant --warmup-steps 0)"

# The tutorial's file: train_batch_size 4 on 2 ranks is 2 per rank, and WarmupLR rises as log.
expect 0 "train_micro_batch_size_per_gpu 2: derived as DeepSpeed does: train_batch_size 4 = 2 x 1 x 2 data-parallel rank(s)" \
  "${mpirun[@]}" "$lab" "${few[@]}" --config "$configs/ds_config.json"
expect 0 "scheduler.params.warmup_type              --warmup-type log (DeepSpeed's default)" \
  "${mpirun[@]}" "$lab" "${few[@]}" --config "$configs/ds_config.json"
tutorial=(--batch-size 2 --log-every 2000 --optimizer adamw --beta1 0.8 --beta2 0.999 --eps 1e-8
  --wd 3e-7 --lr-schedule constant --lr 0.001 --warmup-steps 1000)
as_file=$(ending --config "$configs/ds_config.json")
same "ds_config.json trains as its flags written out" "$as_file" \
  "$(ending "${tutorial[@]}" --warmup-type log)"
linear=$(ending "${tutorial[@]}" --warmup-type linear)
if [[ $as_file == "$linear" ]]; then
  echo "FAILED: the log warm-up ends as the linear one: warmup_type has no effect"
  exit 1
fi
echo "ok: the log warm-up is not the linear one"
expect 1 "train_batch_size 4 does not divide into 3" \
  mpirun --allow-run-as-root --oversubscribe -np 3 "$lab" "${few[@]}" --config "$configs/ds_config.json"

# wall_clock_breakdown: each phase's mean time every steps_per_print steps.
printf '{"wall_clock_breakdown": true, "steps_per_print": 2}' >"$TEST_TMPDIR/breakdown.json"
expect 0 "step 4 time (ms) over 2 step(s) | load: " "$lab" --test --test-nsteps 5 --no-progress \
  --device cpu --sample-tokens 0 --context 32 --config "$TEST_TMPDIR/breakdown.json"

# A tutorial-style file of the ZeRO keys off their defaults: stage 1 all-reducing bucket by
# bucket without overlap, the same ending as plain zero1; the 1-bit keys of transport said
# ignored.
cat >"$TEST_TMPDIR/zero1.json" <<'JSON'
{"zero_optimization": {"stage": 1, "reduce_bucket_size": 20000, "allgather_bucket_size": 30000,
                       "overlap_comm": false, "reduce_scatter": false,
                       "contiguous_gradients": true},
 "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 2, "warmup_type": "linear"}}}
JSON
expect 0 "zero1 over 2 rank(s) (backward prefetch pre, reduce buckets of 20000 elements, all-gathers of at most 30000, reductions not overlapped, all-reduce)" \
  "${mpirun[@]}" "$lab" "${few[@]}" --config "$TEST_TMPDIR/zero1.json"
same "zero1's buckets, all-reduce and no overlap train as plain zero1" \
  "$(ending -b 4 --config "$TEST_TMPDIR/zero1.json")" \
  "$(ending -b 4 --sharding zero1 --lr-schedule constant --lr 0.001 --warmup-steps 2)"
printf '{"optimizer": {"type": "OneBitAdam", "params": {"freeze_step": 2, "cuda_aware": true, "comm_backend_name": "nccl"}}}' \
  >"$TEST_TMPDIR/onebit.json"
expect 0 "optimizer.params.comm_backend_name \"nccl\": ignored: the course's communicator is NCCL on GPUs and MPI otherwise" \
  "${mpirun[@]}" "$lab" "${few[@]}" --config "$TEST_TMPDIR/onebit.json"
expect 1 "error: --no-overlap-comm, --no-reduce-scatter and --allgather-bucket-size are the sharded modes'" \
  "$lab" "${few[@]}" --no-reduce-scatter
expect 1 "error: --allgather-bucket-size sizes the gather after the step of zero1 and zero2" \
  "${mpirun[@]}" "$lab" "${few[@]}" --sharding zero3 --allgather-bucket-size 10

# Stage 3's fetching keys: DeepSpeed's one-block prefetch and persistent tensors change which
# values are gathered when, never a sum: the same ending as plain zero3.
printf '{"zero_optimization": {"stage": 3, "stage3_prefetch_bucket_size": 1, "stage3_param_persistence_threshold": 1e3}}' \
  >"$TEST_TMPDIR/zero3.json"
expect 0 "zero3 over 2 rank(s) (reduce buckets of 500000000 elements, stage-3 prefetch of 1 elements with at most 1000000000 live, tensors of at most 1000 elements persistent)" \
  "${mpirun[@]}" "$lab" "${few[@]}" --config "$TEST_TMPDIR/zero3.json"
same "zero3's stage-3 prefetch and persistent tensors train as plain zero3" \
  "$(ending -b 4 --config "$TEST_TMPDIR/zero3.json")" \
  "$(ending -b 4 --sharding zero3 --lr-schedule constant --warmup-steps 0)"
expect 1 "error: --prefetch-bucket-size, --max-live-parameters and --param-persistence-threshold are for the strategies that free parameters between uses" \
  "${mpirun[@]}" "$lab" "${few[@]}" --sharding zero2 --param-persistence-threshold 10
expect 1 "error: --prefetch-bucket-size is DeepSpeed's prefetch in both passes; it replaces --forward-prefetch" \
  "${mpirun[@]}" "$lab" "${few[@]}" --sharding zero3 --prefetch-bucket-size 10 --forward-prefetch
expect 1 "error: --max-live-parameters bounds DeepSpeed's prefetch: add --prefetch-bucket-size" \
  "${mpirun[@]}" "$lab" "${few[@]}" --sharding zero3 --max-live-parameters 10
