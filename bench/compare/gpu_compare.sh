#!/usr/bin/env bash
# Day 1's training step on one GPU, the lab's against PyTorch's, side by side in one run with
# ratios: ResNet-50 on 224x224 single-channel images at batch 128 in f32 (TF32 convolutions on
# both sides, their default), under bf16 autocast, and bf16 + channels-last; day 4's GPT-2
# (124M) on 8 x 1024 random tokens under bf16 autocast, tokens/s with the lab's MFU (PyTorch's
# attention through scaled_dot_product_attention, the lab's through cuDNN's flash attention);
# the small network at batch 512 and at batch 32, where kernel launches dominate, eager on both
# sides and as the lab's CUDA graph; last, ViT-B/16 at batch 64 under bf16 autocast. Rows in the
# order of their value, each side of each row under its own time limit: a side that hangs or
# fails shows "-" and why, and the rows after it still run.
# Rates exclude the first step and loading on both sides; PyTorch reuses one random batch, the
# labs draw --synthetic images (--synthetic-tokens) through their loaders.
#   bench/compare/gpu_compare.sh [--lab BINARY] [--lab4 BINARY] [--python PYTHON] [--steps N]
#                                [--row-limit SECONDS] [--dry-run]
#     --lab       the day-1 lab (default: bazel-bin/solutions/day1_gpu/lab, made by
#                 `bazel build //solutions/day1_gpu:lab`; a bundle's
#                 gpu_selftest/tools/gpu_selftest/day1_gpu_lab does too)
#     --lab4      the day-4 lab (default: bazel-bin/solutions/day4_large_models/lab; a bundle's
#                 gpu_selftest/tools/gpu_selftest/day4_large_models_lab)
#     --python    a Python with torch and torchvision (default: python3); without them, or
#                 where its torch sees no GPU, the lab's side alone, said once
#     --steps     timed steps per row (default 20)
#     --row-limit each side of a row at most this long (default 60 s)
#     --dry-run   the same rows on the simulated accelerator (PyTorch's on the CPU), shrunk to a
#                 few small steps each: the table's making checked where no GPU is
set -uo pipefail
cd "$(dirname "$0")/../.."
lab=bazel-bin/solutions/day1_gpu/lab lab4=bazel-bin/solutions/day4_large_models/lab
python=python3 steps=20 row_limit=60 dry_run=false
while (($#)); do
  case $1 in
    --lab) lab=$2; shift 2 ;;
    --lab4) lab4=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --row-limit) row_limit=$2; shift 2 ;;
    --dry-run) dry_run=true; shift ;;
    *)
      echo "gpu_compare: unknown option '$1' (--lab, --lab4, --python, --steps, --row-limit," \
        "--dry-run)" >&2
      exit 2
      ;;
  esac
done
[[ -x $lab ]] || { echo "gpu_compare: no day-1 lab at $lab (--lab)" >&2; exit 2; }
[[ -x $lab4 ]] || { echo "gpu_compare: no day-4 lab at $lab4 (--lab4)" >&2; exit 2; }
device=cuda torch_device=cuda
if $dry_run; then
  device=sim torch_device=cpu steps=2
  echo "dry run: the simulated accelerator, every row shrunk (its shape in its name)"
else
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
fi
torch_side=true
if ! "$python" -c "import sys, torch, torchvision
sys.exit('$torch_device' == 'cuda' and not torch.cuda.is_available())" 2>/dev/null; then
  torch_side=false
  echo "note: $python has no torch and torchvision that run on $torch_device: the lab's side alone"
fi
echo "| setting | PyTorch per s | lab per s | lab / PyTorch |"
echo "|---|---:|---:|---:|"

# row SETTING PYTORCH LAB: a table row with the ratio ("-" where a side has no figure), counted.
rows=0 lab_rows=0 both_rows=0
row() {
  local ratio=-
  [[ $2 != - && $3 != - ]] && ratio=$(awk -v a="$2" -v b="$3" 'BEGIN {printf "%.2f", b / a}')
  echo "| $1 | $2 | $3 | $ratio |"
  rows=$((rows + 1))
  [[ $3 != - ]] && lab_rows=$((lab_rows + 1))
  [[ $ratio != - ]] && both_rows=$((both_rows + 1))
}

# side PATTERN COMMAND...: the figure the command prints after PATTERN (sed's \1), run under the
# row limit; "-" with the reason on stderr when it fails, hangs or prints none. Its whole output
# is left in $side_output.
side_output=$(mktemp)
trap 'rm -f "$side_output"' EXIT
side() {
  local pattern=$1 out status figure
  shift
  out=$(timeout --kill-after=5 "$row_limit" "$@" 2>&1)
  status=$?
  echo "$out" >"$side_output"
  figure=$(sed -n "s/$pattern/\1/p" <<<"$out" | tail -n 1)
  if ((status != 0)) || [[ -z $figure ]]; then
    local why="exit $status"
    ((status == 124 || status == 137)) && why="cut after ${row_limit} s"
    echo "  ($(basename "$1"): $why: $(tail -n 1 <<<"$out"))" >&2
    figure=-
  fi
  echo "$figure"
}

# measure MODEL BATCH SIZE AMP LAYOUT GRAPH: one row; AMP is f32 or bf16, LAYOUT nchw or
# channels-last, GRAPH eager or graph (the lab alone).
measure() {
  local model=$1 batch=$2 size=$3 amp=$4 layout=$5 graph=$6 theirs=- ours
  local flags=()
  [[ $amp == bf16 ]] && flags+=(--amp)
  [[ $layout == channels-last ]] && flags+=(--channels-last)
  if [[ $graph == eager ]]; then
    $torch_side && theirs=$(side '^train_step: \([0-9.]*\).*' "$python" \
      bench/compare/torch_side.py train-step --device "$torch_device" --model "$model" \
      --batch "$batch" --size "$size" --steps "$steps" "${flags[@]}")
  else
    flags+=(--cuda-graphs)
  fi
  ours=$(side '^training performance *\([0-9.]*\).*' "$lab" --device "$device" --model "$model" \
    --batch-size "$batch" --image-size "$size" --synthetic $((batch * (steps + 2))) --test \
    --test-nsteps $((steps + 1)) --no-progress "${flags[@]}")
  row "$model b$batch ${size}px $amp $layout $graph" "$theirs" "$ours"
}

# gpt MODEL BATCH CONTEXT WINDOWS: day 4's GPT on WINDOWS windows of random tokens (a twentieth
# held out for validation) under bf16 autocast, eager: tokens/s and the lab's MFU of the GPU's
# dense bf16 peak.
gpt() {
  local model=$1 batch=$2 context=$3 windows=$4 theirs=- ours mfu
  $torch_side && theirs=$(side '^gpt_train: \([0-9.]*\).*' "$python" bench/compare/torch_side.py \
    gpt-train --device "$torch_device" --model "$model" --batch "$batch" --steps "$steps" --amp)
  ours=$(side '^training performance *\([0-9.]*\).*' "$lab4" --device "$device" --model "$model" \
    --synthetic-tokens $((windows * context)) --batch-size "$batch" --amp --test \
    --test-nsteps $((steps + 1)) --no-progress)
  mfu=$(grep -oE "MFU [0-9.]+%" "$side_output" || echo "no MFU")
  row "$model b$batch $context tokens bf16 eager, tokens/s (lab: $mfu)" "$theirs" "$ours"
}

if $dry_run; then
  measure resnet50 2 32 f32 nchw eager
  measure resnet50 2 32 bf16 nchw eager
  measure resnet50 2 32 bf16 channels-last eager
  gpt gpt-tiny 2 64 80
  measure smallnet 16 28 f32 nchw eager
  measure smallnet 16 28 f32 nchw graph
  measure smallnet 4 28 f32 nchw eager
  measure smallnet 4 28 f32 nchw graph
  measure vit-micro 2 28 bf16 nchw eager
else
  measure resnet50 128 224 f32 nchw eager
  measure resnet50 128 224 bf16 nchw eager
  measure resnet50 128 224 bf16 channels-last eager
  gpt gpt2 8 1024 $((8 * (steps + 4)))
  measure smallnet 512 28 f32 nchw eager
  measure smallnet 512 28 f32 nchw graph
  measure smallnet 32 28 f32 nchw eager
  measure smallnet 32 28 f32 nchw graph
  measure vit-b16 64 224 bf16 nchw eager
fi
echo "speed: $rows rows, the lab's figure in $lab_rows, beside PyTorch's in $both_rows"
((lab_rows == rows))
