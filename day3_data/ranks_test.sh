#!/usr/bin/env bash
# The day-3 lab and race on 2 and 3 MPI ranks: each storage format's epoch split into the
# ranks' spans, mixing on the host and the device, the replicas identical after training (DDP),
# the race's budget measured on the job's ranks with its recipe written once; --findlr and a
# --drop-last that leaves a rank nothing are refused with one message.
set -uo pipefail
source "$1"  # expect
lab=$2
race=$3
make_dataset=$4
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE  # not shared by the ranks
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
run=(--batch-size 8 --device cpu --no-progress --num-workers 1)

data=$TEST_TMPDIR/data
for format in tar packed; do
  expect 0 "val: 40 images" "$make_dataset" --to "$format" --out "$data/$format" --train 64 \
    --val 40 --shard-samples 16 --page-kb 4
done
expect 0 "training smallnet on 2 ranks (cpu, DDP in 1 buckets): 32 images of 28x28 per rank, batch 8 per rank, 4 steps per epoch" \
  "${mpirun[@]}" -np 2 "$lab" --synthetic 64 --test "${run[@]}"
expect 0 "replicas: identical weights on all 2 ranks" "${mpirun[@]}" -np 2 "$lab" \
  --data-dir "$data/tar" "${run[@]}" --mixup 0.8 --aug-device --translate 2
expect 0 "replicas: identical weights on all 2 ranks" "${mpirun[@]}" -np 2 "$lab" \
  --data-dir "$data/packed" "${run[@]}" --auto-augment trivialaugment --cutmix 1
expect 0 "replicas: identical weights on all 3 ranks" "${mpirun[@]}" -np 3 "$lab" \
  --synthetic 70 "${run[@]}" --epochs 2 --optimizer adamw --lr 0.003
# f16 from a loss scale of 2^24 on 2 ranks, mixed batches included (their soft-target gradient
# scaled too): the overflowed steps are skipped by both ranks alike (the replicas stay identical)
# and each halves the scale; without overflow, f16 ends within 0.005 of the f32 run's loss.
plain=(--data-dir "$data/packed" "${run[@]}" --cutmix 1)
f16=("${plain[@]}" --amp --amp-dtype f16)
overflowed=$("${mpirun[@]}" -np 2 "$lab" "${f16[@]}" --initial-scale-power 24 --epochs 3 2>&1)
grep -q "replicas: identical weights on all 2 ranks" <<<"$overflowed" ||
  { echo "FAILED: the replicas differ after f16's skipped steps:"; echo "$overflowed"; exit 1; }
expect_scale_backed_off "$overflowed" 24
# 1-bit Adam after its freeze keeps each rank's gradients its own: the ranks agree on the
# overflow before stepping, so the replicas stay identical through the skipped steps too; its
# skipped steps do not count towards the freeze (counted, the warm-up of skipped steps would
# freeze a variance never updated, and the run diverges).
onebit=$("${mpirun[@]}" -np 2 "$lab" "${f16[@]}" --initial-scale-power 24 --epochs 3 \
  --optimizer onebit-adam --freeze-step 2 --lr 5e-4 2>&1)
grep -q "replicas: identical weights on all 2 ranks" <<<"$onebit" ||
  { echo "FAILED: 1-bit Adam's replicas differ after f16's skipped steps:"; echo "$onebit"; exit 1; }
expect_scale_backed_off "$onebit" 24
test_loss() { "$@" 2>&1 | grep -m1 -oE "test loss [0-9.]+" | grep -oE "[0-9.]+$"; }
expect_near "$(test_loss "${mpirun[@]}" -np 2 "$lab" "${plain[@]}")" \
  "$(test_loss "${mpirun[@]}" -np 2 "$lab" "${f16[@]}")" 0.005 "day 3's f16 vs f32 test loss"
expect 1 "--drop-last leaves no training image for each of 3 ranks" "${mpirun[@]}" -np 3 "$lab" \
  --synthetic 2 --drop-last "${run[@]}"
expect 1 "--findlr sweeps on one process" "${mpirun[@]}" -np 2 "$lab" --synthetic 64 --findlr \
  "${run[@]}"

# The race on 2 ranks: timed on both (the slower rank's step), the CPU's budget for 2 ranks,
# the recipe line written once by rank 0, then the epochs.
metrics=$TEST_TMPDIR/race.jsonl
expect 0 "batches per epoch on 2 GPU(s)" "${mpirun[@]}" -np 2 "$race" --synthetic 64 --test \
  --test-nsteps 3 "${run[@]}"
expect 0 "replicas: identical weights on all 2 ranks" "${mpirun[@]}" -np 2 "$race" \
  --synthetic 64 --epochs 2 --test-nsteps 3 "${run[@]}" --metrics "$metrics"
recipes=$(grep -c '"recipe"' "$metrics")
epochs=$(grep -c '"epoch"' "$metrics")
if [[ $recipes -ne 1 || $epochs -ne 2 ]] || ! grep -q '"gpus":2' "$metrics" ||
  ! grep -q '"race_gpus":2' "$metrics"; then
  echo "FAILED: expected 1 recipe line for 2 GPUs and 2 epoch records in $metrics:"
  cat "$metrics"
  exit 1
fi
echo "ok: the race's metrics have one recipe line (2 GPUs, 2 in the race) and 2 epochs"
