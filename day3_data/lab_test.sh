#!/usr/bin/env bash
# The lab binaries as trainees meet them: the untouched trainee lab runs its baseline and every
# worker and device augmentation, and fails with the exercise's TODO (exit 3) only when mixing,
# tar shards or packed files are asked for; the solutions' lab mixes on the host and on the
# device and reads every storage format that //tools:make_dataset writes, and accumulates
# micro-batches as one batch; bad flags and bad
# files end with one message and a non-zero exit.
set -uo pipefail
source "$1"  # expect
trainee=$2
solution=$3
make_dataset=$4
base=(--synthetic 64 --test --test-nsteps 2 --no-progress)
small=("${base[@]}" --batch-size 16 --device cpu)

expect 0 "training performance" "$trainee" "${small[@]}"
expect 0 "workers crop, flip, jitter, RandAugment(2, 9); batch none" "$trainee" "${small[@]}" \
  --augment --auto-augment randaugment --translate 2 --brightness 0.2 --contrast 0.2
expect 0 "workers crop, TrivialAugmentWide; batch flip, jitter on the device" "$trainee" \
  "${small[@]}" --augment --auto-augment trivialaugment --translate 2 --contrast 0.3 --aug-device
expect 0 "augment" "$trainee" "${small[@]}" --aug-device --brightness 0.2
expect 3 "TODO TP3.2" "$trainee" "${small[@]}" --mixup 0.8
expect 3 "TODO TP3.1" "$trainee" "${small[@]}" --cutmix 1
expect 0 "batch MixUp/CutMix (pair) on the host" "$solution" "${small[@]}" --mixup 0.8 \
  --cutmix 1 --mix-mode pair
expect 0 "batch flip, jitter, CutMix (elem) on the device" "$solution" "${small[@]}" --cutmix 1 \
  --mix-mode elem --aug-device --translate 3
expect 0 "test accuracy" "$solution" --synthetic 64 --batch-size 16 --device cpu --no-progress \
  --mixup 0.8 --aug-device
expect 0 "steps per epoch, channels-last" "$solution" "${small[@]}" --channels-last --cutmix 1 \
  --aug-device --translate 2
expect 1 "--metrics" "$solution" "${small[@]}" --metrics "$TEST_TMPDIR/no/such/folder/m.jsonl"

# --accumulate 4 of 6 images trains as batches of 24 (a Vision Transformer: no batch norm), mixed
# on the host or the device or not, clipped alike, the epoch's short last batch of 4 included;
# the clip's norm is in the metrics.
vit=(--synthetic 100 --model vit-micro --no-progress --device cpu --num-workers 1 --lr 0.01
  --clip-grad-norm 0.3)
ending() { "$@" 2>&1 | grep -E "^epoch 1:|^gradient norm"; }
for mix in "" "--mixup 0.8 --aug-device --translate 2" "--cutmix 1"; do
  whole=$(ending "$solution" "${vit[@]}" --batch-size 24 $mix)
  accumulated=$(ending "$solution" "${vit[@]}" --batch-size 6 --accumulate 4 $mix \
    --metrics "$TEST_TMPDIR/accumulated.jsonl")
  if [[ -z "$whole" || "$accumulated" != "$whole" ]] || ! grep -q "clipped to 0.3 in 5 of 5" <<<"$whole"; then
    echo "FAILED: --accumulate 4 $mix ends otherwise than batches of 24 (or does not clip):"
    echo "$accumulated"
    echo "batches of 24:"
    echo "$whole"
    exit 1
  fi
  echo "ok: --accumulate 4 $mix trains as batches of 24: $(tr '\n' ' ' <<<"$whole")"
done
expect 0 '"grad_norm_max"' cat "$TEST_TMPDIR/accumulated.jsonl"
expect 1 "--accumulate must be at least 1" "$solution" "${small[@]}" --accumulate 0

data=$TEST_TMPDIR/data
for format in folder tar packed; do
  expect 0 "val: 40 images" "$make_dataset" --to "$format" --out "$data/$format" --train 64 \
    --val 40 --shard-samples 20 --page-kb 4
done
expect 0 "val: 40 images" "$make_dataset" --to packed --encoding pixels --out "$data/pixels" \
  --train 64 --val 40 --page-kb 4
expect 1 "error: cannot create the folder /proc/no-dataset" "$make_dataset" --to tar \
  --out /proc/no-dataset --train 4 --val 4
formats=(--test --test-nsteps 2 --no-progress --batch-size 16 --device cpu)
expect 3 "TODO TP3.4" "$trainee" --data-dir "$data/tar" "${formats[@]}"
expect 3 "TODO TP3.5" "$trainee" --data-dir "$data/packed" "${formats[@]}"
expect 0 "storage: 4 tar shard(s) in WebDataset's order" "$solution" --data-dir "$data/tar" \
  "${formats[@]}"
expect 0 "storage: a packed file of 13 page(s) of 4 KiB" "$solution" --data-dir "$data/pixels" \
  "${formats[@]}" --pages-in-memory 2
expect 0 "test accuracy" "$solution" --data-dir "$data/packed" --batch-size 16 --device cpu \
  --no-progress --auto-augment trivialaugment
expect 0 "storage: $data/folder" "$solution" --data-dir "$data/folder" "${formats[@]}"
# Decoding on the device (the simulated accelerator stands in for a GPU, OpenCV for nvJPEG):
# ImageNet-shaped JPEGs in 20 classes, every training and validation image decoded there, no
# host wait in a step; what the device path cannot do is refused with one message.
expect 0 "train: 40 images" "$make_dataset" --imagenet-shaped 20 --to folder --out "$data/inet" \
  --train 40 --val 16
inet=(--data-dir "$data/inet" --image-size 64 --batch-size 8 --epochs 1 --no-progress --device sim)
expect 0 "decoded on sim:0: 56 by the simulated decoder (OpenCV), 0 by the loader's workers" \
  "$solution" "${inet[@]}" --decode-device gpu
expect 0 "host waits for sim:0 in steps 2..5: 0 at most" "$trainee" "${inet[@]}" \
  --decode-device gpu
expect 0 "batch flip, jitter on the device" "$solution" "${inet[@]}" --decode-device gpu \
  --channels-last --aug-device --translate 4 --brightness 0.2
expect 1 "holds decoded images: write the data as JPEGs" "$solution" "${base[@]}" \
  --decode-device gpu --device sim
expect 1 "but it is the CPU" "$solution" "${formats[@]}" --data-dir "$data/inet" \
  --decode-device gpu
expect 1 "--auto-augment works on decoded images" "$solution" "${inet[@]}" --decode-device gpu \
  --auto-augment randaugment
expect 1 "need --aug-device" "$solution" "${inet[@]}" --decode-device gpu --brightness 0.2
expect 105 "--decode-device" "$solution" "${inet[@]}" --decode-device tpu
expect 1 "--train-subset and --test-subset need in-memory data" "$solution" \
  --data-dir "$data/folder" "${formats[@]}" --test-subset 8
expect 0 "training smallnet on cpu: 48 images" "$solution" "${base[@]}" --device cpu --batch-size 4 \
  --train-subset 48
expect 1 "--train-subset 65 is more than the 64 training images" "$solution" "${small[@]}" \
  --train-subset 65
expect 1 "train has no classes (expected one sub-folder of images per class)" "$solution" \
  --data-dir "$data/tar" --format folder "${formats[@]}"
head -c 3000 "$data/tar/train/shard-000001.tar" >"$data/cut.tar" &&
  mv "$data/cut.tar" "$data/tar/train/shard-000001.tar"
expect 1 "shard-000001.tar is not a whole tar archive" "$solution" --data-dir "$data/tar" \
  "${formats[@]}"
printf 'NOTAPACK' | dd of="$data/packed/val.pack" conv=notrunc status=none
expect 1 "val.pack is not valid: bad magic" "$solution" --data-dir "$data/packed" "${formats[@]}"

expect 1 "error: RandAugment's magnitude must be in [0, 30], got 31" "$solution" "${small[@]}" \
  --auto-augment randaugment --ra-m 31
expect 1 "error: --brightness and --contrast must be in [0, 1], got 2 and 0" "$solution" \
  "${small[@]}" --brightness 2
expect 1 "--batch-size must be even, got 15" "$solution" "${base[@]}" --device cpu --mixup 0.8 \
  --batch-size 15
expect 1 "the epoch's last batch has 5 images: add --drop-last" "$solution" --synthetic 69 \
  --test --test-nsteps 2 --no-progress --device cpu --batch-size 16 --mixup 0.8
expect 1 "alphas must not be negative" "$solution" "${small[@]}" --mixup -1
expect 1 "mixing and switch probabilities must be in [0, 1], got 1.5" "$solution" "${small[@]}" \
  --cutmix 1 --mix-prob 1.5
expect 105 "--mix-mode" "$solution" "${small[@]}" --mix-mode halves
expect 105 "--auto-augment" "$solution" "${small[@]}" --auto-augment autoaugment
expect 0 "--aug-device" "$solution" --help

# The optimizer and schedule flags, the learning-rate finder as trainees run it (through
# bazel run: the plot lands where they started), and the trainee's TODO TP3.6.
expect 0 "optimizer: lion, cosine schedule to lr 0.001 down to 0.0002, warm-up 0.5 epochs" \
  "$solution" "${small[@]}" --optimizer lion --lr 1e-3 --schedule cosine --cosine-floor 0.2 \
  --epochs 2 --warmup-epochs 0.5
expect 0 "optimizer: sgd, one-cycle schedule to lr 0.1" "$solution" "${small[@]}"
expect 0 "training performance" "$solution" --synthetic 32 --batch-size 16 --device cpu \
  --no-progress --test --test-nsteps 5 --epochs 3
expect 0 "suggested learning rate: " env BUILD_WORKING_DIRECTORY="$TEST_TMPDIR" "$solution" \
  --synthetic 64 --batch-size 16 --device cpu --no-progress --findlr --findlr-start 1e-4 \
  --findlr-rates 4 --findlr-steps 3 --lr 1 --findlr-plot sweep.png
[[ $(head -c 4 "$TEST_TMPDIR/sweep.png" | tail -c 3) == PNG ]] || { echo "FAILED: no sweep.png"; exit 1; }
[[ $(wc -l <"$TEST_TMPDIR/sweep.csv") == 5 ]] || { echo "FAILED: sweep.csv rows"; exit 1; }
expect 3 "TODO TP3.6" "$trainee" --synthetic 64 --batch-size 16 --device cpu --no-progress \
  --findlr --findlr-plot "$TEST_TMPDIR/todo.png"
expect 0 "test accuracy" "$solution" --synthetic 64 --batch-size 16 --device cpu --no-progress \
  --logdir "$TEST_TMPDIR/tensorboard"
compgen -G "$TEST_TMPDIR/tensorboard/events.out.tfevents.*" >/dev/null ||
  { echo "FAILED: no event file in --logdir"; exit 1; }
expect 105 "--optimizer: adam not in" "$solution" "${small[@]}" --optimizer adam
expect 105 "--findlr-mode" "$solution" "${small[@]}" --findlr --findlr-mode both
expect 1 "--cosine-floor is a fraction of --lr, from 0 to 1, got 5" "$solution" "${small[@]}" \
  --cosine-floor 5
expect 1 "--warmup-epochs must be from 0 to --epochs, got 3" "$solution" "${small[@]}" \
  --warmup-epochs 3
expect 1 "--findlr sweeps from --findlr-start up to --lr: need 0 < 1e-08 < 1e-09" "$solution" \
  "${small[@]}" --findlr --lr 1e-9
