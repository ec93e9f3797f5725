#!/usr/bin/env bash
# The day-2 lab as trainees and instructors meet it, on 1 and 2 MPI ranks: the untouched
# trainee lab stops at TODO TP2.1; the solutions' lab runs every gradient synchronisation,
# all-reduce, optimizer and data path, and accumulates and clips as one process, and trains in f16
# with the loss scaler; bad input ends with one message and a non-zero exit;
# a rank that stalls or dies ends the job within the communication timeout; a preempted job
# checkpoints and resumes to the uninterrupted result.
set -uo pipefail
source "$1"  # expect
trainee=$2
solution=$3
folder_tool=$4
unset TEST_PREMATURE_EXIT_FILE XML_OUTPUT_FILE  # not shared by the ranks
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x OMP_NUM_THREADS=1)
small=(--synthetic 256 --test --test-nsteps 3 --no-progress --batch-size 16 --device cpu
  --num-workers 2)

expect 3 "TODO TP2.1" "$trainee" "${small[@]}"
expect 0 "gradient sync" "$solution" "${small[@]}"
expect 0 "on 2 rank(s)" "${mpirun[@]}" -np 2 "$solution" "${small[@]}"
expect 0 "naive gradient sync" "${mpirun[@]}" -np 2 "$solution" "${small[@]}" --ddp naive \
  --optimizer lars --sync-bn
expect 0 "(1 buckets, ring)" "${mpirun[@]}" -np 2 "$solution" "${small[@]}" --allreduce ring \
  --optimizer lamb --base-batch 16 --warmup-epochs 0.1 --no-overlap
expect 0 "test accuracy" "${mpirun[@]}" -np 2 "$solution" --synthetic 256 --no-progress \
  --batch-size 16 --device cpu --global-batch-size 32 --no-persistent-workers --no-pin-memory

# A refused flag, the same on every rank, is said once (by rank 0), whichever rank fails first.
said_once() { # TEXT COMMAND...
  local text=$1 out
  shift
  out=$("$@" 2>&1) && { echo "FAILED: $* was accepted"; exit 1; }
  [[ $(grep -cF -- "$text" <<<"$out") == 1 ]] || {
    echo "FAILED: '$text' is not said exactly once by $*:"
    echo "$out"
    exit 1
  }
  echo "ok: $* -> said once"
}
said_once "The following argument was not expected: --bogus" "${mpirun[@]}" -np 4 "$solution" --bogus
said_once "error: --lr must be positive, got -1" "${mpirun[@]}" -np 4 "$solution" --lr -1

# ImageFolder input, a corrupt JPEG in it, and folders that are not datasets.
folder=$TEST_TMPDIR/images
expect 0 "wrote 64 + 16 jpg" "$folder_tool" --out "$folder" --source synthetic --train 64 \
  --val 16 --size 40
expect 0 "test accuracy" "$solution" --data-dir "$folder" --image-size 32 --batch-size 8 \
  --no-progress --num-workers 2
printf '\xff\xd8\xff\xe0 not really a jpeg' >"$folder/train/3/broken.jpg"
expect 1 "train/3/broken.jpg" "$solution" --data-dir "$folder" --image-size 32 \
  --batch-size 80 --no-progress --num-workers 2 --base-batch 80
expect 0 "skipped 1 unreadable image" "$solution" --data-dir "$folder" --image-size 32 \
  --batch-size 80 --no-progress --num-workers 2 --skip-corrupt --base-batch 80
mkdir -p "$TEST_TMPDIR/empty/train" "$TEST_TMPDIR/empty/val"
expect 1 "has no classes" "$solution" --data-dir "$TEST_TMPDIR/empty" --no-progress
expect 1 "does not exist" "$solution" --data-dir "$TEST_TMPDIR/nowhere" --no-progress
expect 1 "does not divide over 2 ranks" "${mpirun[@]}" -np 2 "$solution" "${small[@]}" \
  --global-batch-size 33
expect 105 "--optimizer: adagrad not in" "$solution" --optimizer adagrad

# --accumulate and --clip-grad-norm: 2 ranks of 3 micro-batches of 4 train as one process on
# batches of 24 (a Vision Transformer: no batch norm), the epoch's short last batch included,
# clipped alike, with the gradients all-reduced once per step (the same bytes per step).
vit=(--synthetic 200 --model vit-micro --no-progress --device cpu --num-workers 1 --lr 0.05
  --clip-grad-norm 0.3)
ending() {
  "$@" 2>&1 | grep -E "^epoch 1:|^gradient (norm|sync)" | sed 's/ per step, .*/ per step/'
}
alone=$(ending "$solution" "${vit[@]}" --batch-size 24)
if ! grep -q "clipped to 0.3 in 9 of 9 steps" <<<"$alone"; then
  echo "FAILED: the one-process run should clip every step: $alone"
  exit 1
fi
for flags in "" "--ddp naive"; do
  got=$(ending "${mpirun[@]}" -np 2 "$solution" "${vit[@]}" --batch-size 4 --accumulate 3 $flags)
  if [[ "$got" != "$alone" ]]; then
    echo "FAILED: 2 ranks --accumulate 3 $flags end otherwise than one process:"
    echo "$got"
    echo "one process:"
    echo "$alone"
    exit 1
  fi
  echo "ok: 2 ranks of 3 micro-batches $flags end as one process: $(tr '\n' ' ' <<<"$got")"
done

# f16 with the dynamic loss scaler, both gradient syncs: 2 ranks end within 0.005 of f32's loss;
# from a first scale of 2^24 the first steps overflow, each skipped and halving the scale (the
# ranks decide on the averaged gradients, so they skip alike: day 3's ranks_test compares the
# replicas). The scaler's flags need f16.
train_loss() { grep -m1 -oE "^epoch 1: train loss [0-9.]+" <<<"$1" | grep -oE "[0-9.]+$"; }
for flags in "" "--ddp naive"; do
  f16=$("${mpirun[@]}" -np 2 "$solution" "${vit[@]}" --batch-size 4 --accumulate 3 --amp \
    --amp-dtype f16 $flags 2>&1)
  expect_near "$(train_loss "$alone")" "$(train_loss "$f16")" 0.005 "f16 vs f32 loss $flags"
  expect_scale_backed_off "$("${mpirun[@]}" -np 2 "$solution" "${vit[@]}" --batch-size 4 \
    --accumulate 3 --amp --amp-dtype f16 --initial-scale-power 24 $flags 2>&1)" 24
done
# The scaler's state is checkpointed: an f16 run from 2^24 stopped after 5 steps and resumed to
# 14 ends with the straight run's scale, skipped steps and checkpoint, byte for byte.
overflowing=("$solution" "${vit[@]}" --batch-size 24 --amp --amp-dtype f16 --initial-scale-power 24
  --epochs 2 --test)
straight=$("${overflowing[@]}" --test-nsteps 14 --chkpt "$TEST_TMPDIR/f16.ckpt" 2>&1)
expect 0 "loss scale" "${overflowing[@]}" --test-nsteps 5 --chkpt "$TEST_TMPDIR/f16_resumed.ckpt"
resumed=$("${overflowing[@]}" --test-nsteps 14 --chkpt "$TEST_TMPDIR/f16_resumed.ckpt" \
  --resume "$TEST_TMPDIR/f16_resumed.ckpt" 2>&1)
if [[ $(grep "^loss scale" <<<"$resumed") != $(grep "^loss scale" <<<"$straight") ]] ||
  ! cmp "$TEST_TMPDIR/f16.ckpt" "$TEST_TMPDIR/f16_resumed.ckpt"; then
  echo "FAILED: the resumed f16 run ends otherwise than the straight one:"
  grep "^loss scale" <<<"$straight"
  grep "^loss scale" <<<"$resumed"
  exit 1
fi
echo "ok: resumed f16 run: $(grep "^loss scale" <<<"$resumed"), the straight run's checkpoint"
# LARS, whose trust ratio moves the weights after the fused update, skips by one read of the
# flag on the host: the same back-off on 2 ranks.
expect_scale_backed_off "$("${mpirun[@]}" -np 2 "$solution" "${vit[@]}" --batch-size 4 \
  --accumulate 3 --optimizer lars --amp --amp-dtype f16 --initial-scale-power 24 2>&1)" 24
expect 1 "set f16's loss scaler: add --amp --amp-dtype f16" "$solution" "${small[@]}" \
  --initial-scale-power 12
expect 1 "--clip-grad-norm must be positive" "$solution" "${small[@]}" --clip-grad-norm 0
expect 1 "the epoch's last batch of 4 image(s) does not split into 8 micro-batches" \
  "${mpirun[@]}" -np 2 "$solution" "${vit[@]}" --batch-size 3 --accumulate 8

# signal_a_rank SIGNAL LOG COMMAND...: starts the job with a fresh LOG, sends SIGNAL to one of
# its ranks once training runs (0.3 s after the "training" line), and waits at most 60 s for the
# job to end; sets $code and $seconds. The job must train for a few seconds: one that ends
# before the signal fails here with that reason.
signal_a_rank() {
  local signal=$1 log=$2
  shift 2
  : >"$log"  # an earlier job's "training" line must not count for this one
  "$@" >>"$log" 2>&1 &
  local launcher=$!
  for _ in $(seq 300); do
    grep -q "^training" "$log" && break
    sleep 0.1
  done
  sleep 0.3
  local victim
  victim=$(pgrep -P "$launcher" | tail -1)
  if [[ -z $victim ]]; then
    echo "FAILED: no rank to signal: the job had no running rank 0.3 s after its training line"
    cat "$log"
    exit 1
  fi
  kill -s "$signal" "$victim"
  local start=$SECONDS
  while kill -0 "$launcher" 2>/dev/null; do
    if ((SECONDS - start > 60)); then
      echo "FAILED: the job still runs 60 s after SIG$signal to a rank"
      kill -9 "$launcher" "$victim"
      exit 1
    fi
    sleep 0.2
  done
  wait "$launcher"
  code=$?
  seconds=$((SECONDS - start))
}

# A rank that stalls (SIGSTOP) or dies (SIGKILL) mid-training: the job ends, non-zero, well
# within a minute, the stall with the timeout's message.
long=("${mpirun[@]}" -np 2 "$solution" --synthetic 20000 --epochs 5 --batch-size 16 --device cpu
  --num-workers 0 --no-progress --comm-timeout 5)
for case in "STOP:did not complete within 5 s" "KILL:signal 9"; do
  signal_a_rank "${case%%:*}" "$TEST_TMPDIR/killed.log" "${long[@]}"
  if [[ $code -eq 0 ]] || ! grep -qF -- "${case#*:}" "$TEST_TMPDIR/killed.log"; then
    echo "FAILED: SIG${case%%:*} to a rank -> exit $code (expected non-zero with '${case#*:}'):"
    cat "$TEST_TMPDIR/killed.log"
    exit 1
  fi
  echo "ok: SIG${case%%:*} to a rank -> exit $code after $seconds s"
done

# Preemption (Slurm's SIGUSR1 before the time limit) reaching one rank of two: both stop after
# the same step, rank 0 writes the checkpoint, the job exits 4; resumed, it ends with the
# uninterrupted run's checkpoint, byte for byte.
run=("${mpirun[@]}" -np 2 "$solution" --synthetic 1536 --epochs 3 --batch-size 16 --device cpu
  --num-workers 2 --no-progress)
expect 0 "test accuracy" "${run[@]}" --chkpt "$TEST_TMPDIR/straight.ckpt"
signal_a_rank USR1 "$TEST_TMPDIR/preempted.log" "${run[@]}" --chkpt "$TEST_TMPDIR/preempted.ckpt"
if [[ $code -ne 4 ]] || ! grep -q "preempted: SIGUSR1 after step" "$TEST_TMPDIR/preempted.log"; then
  echo "FAILED: SIGUSR1 -> exit $code (expected 4 and 'preempted: SIGUSR1 after step'):"
  cat "$TEST_TMPDIR/preempted.log"
  exit 1
fi
echo "ok: $(grep -m1 "preempted:" "$TEST_TMPDIR/preempted.log")"
expect 0 "test accuracy" "${run[@]}" --chkpt "$TEST_TMPDIR/preempted.ckpt" \
  --resume "$TEST_TMPDIR/preempted.ckpt"
cmp "$TEST_TMPDIR/straight.ckpt" "$TEST_TMPDIR/preempted.ckpt" ||
  { echo "FAILED: the resumed run's final checkpoint differs from the uninterrupted run's"; exit 1; }
echo "ok: resumed run ends with the uninterrupted run's checkpoint"
