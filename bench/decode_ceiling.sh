#!/usr/bin/env bash
# The loader's ceiling against the step's appetite (day 3's DALI section): an ImageNet-shaped
# dataset (//tools:make_dataset --imagenet-shaped 100: colour JPEGs of 200-500 px a side) read
# at 224 px with RandomResizedCrop and flip, decoded and augmented by 1, 2, ... CPU workers and,
# where a GPU is visible, on the GPU (nvJPEG + the crop kernel); then the day-3 lab's ResNet-50
# step on the same data, its images/s with loading excluded and included, as a Markdown table:
# the slower of the loader and the step sets the pace.
#   bench/decode_ceiling.sh [--images N] [--batch B] [--steps K]
set -euo pipefail
cd "$(dirname "$0")/.."
images=1024 batch=32 steps=6
while (($#)); do
  case $1 in
    --images) images=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "decode_ceiling: unknown option '$1' (--images N, --batch B, --steps K)" >&2; exit 1 ;;
  esac
done
for n in "$images" "$batch" "$steps"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "decode_ceiling: options take positive whole numbers" >&2; exit 1; }
done
bazel build -c opt --noshow_progress --ui_event_filters=-info //tools:make_dataset \
  //bench/compare:loader_throughput //day3_data:lab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bazel-bin/tools/make_dataset --imagenet-shaped 100 --to folder --train "$images" --val 64 \
  --out "$work/data" >/dev/null
gpu=false
nvidia-smi -L >/dev/null 2>&1 && gpu=true

loader() {  # loader LABEL [flags]: a table row of the loader alone, at steady state
  local label=$1 rate
  shift
  rate=$(bazel-bin/bench/compare/loader_throughput --data-dir "$work/data" --augment \
    --image-size 224 --batch-size "$batch" --epochs 2 "$@" | awk '/^loader:/ {print $2}')
  printf '| %-44s | %8.1f |\n' "$label" "$rate"
}
step() {  # step LABEL [flags]: the lab's step rates, loading excluded and included
  local label=$1 out
  shift
  # Its notes (the device's) and errors apart from the table, shown when it fails.
  out=$(bazel-bin/day3_data/lab --data-dir "$work/data" --model resnet50 --image-size 224 \
    --batch-size "$batch" --epochs 1 --test --test-nsteps "$steps" --no-progress "$@" \
    2>"$work/step.err") || { cat "$work/step.err" >&2; return 1; }
  awk -v label="$label" '
    /^training performance/ { step = $3 } /^total performance/ { total = $3 }
    END { printf "| %-44s | %8.1f |\n| %-44s | %8.1f |\n", label " (loading excluded)", step,
          label " (loading included)", total }' <<<"$out"
}

echo "$(nproc) cores; $images ImageNet-shaped JPEGs (100 classes, 200-500 px, quality 75-95)," \
  "RandomResizedCrop 224 + flip, batch $batch"
echo
echo "| what | images/s |"
echo "|---|---:|"
workers=1
while ((workers <= $(nproc))); do
  loader "decode + augment on the CPU, $workers worker(s)" --num-workers "$workers"
  workers=$((workers * 2))
done
if $gpu; then
  loader "decode + augment on the GPU (nvJPEG), 1 reader" --num-workers 1 --decode-device gpu \
    --device cuda
  step "ResNet-50 step, GPU bf16 channels-last" --device cuda --amp --channels-last
  step "ResNet-50 step, GPU, decoded on the GPU" --device cuda --amp --channels-last \
    --decode-device gpu
else
  step "ResNet-50 step on the CPU"
fi
