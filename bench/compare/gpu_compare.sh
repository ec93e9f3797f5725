#!/usr/bin/env bash
# Day 1's training step on one GPU, the lab's against PyTorch's, side by side in one run with
# ratios: ResNet-50 on 224x224 single-channel images at batch 128 in f32 (TF32 convolutions on
# both sides, their default), under bf16 autocast, and bf16 + channels-last; ViT-B/16 at batch
# 64 under bf16 autocast (PyTorch's attention through scaled_dot_product_attention, the lab's
# through cuDNN's flash attention); then the small network at batch 512 and at batch 32, where
# kernel launches dominate, eager on both sides and as the lab's CUDA graph; last, day 4's GPT-2
# (124M) on 8 x 1024 random tokens under bf16 autocast, tokens/s with the lab's MFU (PyTorch's
# attention through scaled_dot_product_attention, the lab's through cuDNN's flash attention).
# Rates exclude the first step and loading on both sides; PyTorch reuses one random batch, the
# labs draw --synthetic images (--synthetic-tokens) through their loaders.
#   bench/compare/gpu_compare.sh [--lab BINARY] [--lab4 BINARY] [--python PYTHON] [--steps N]
#     --lab     the day-1 lab (default: bazel-bin/solutions/day1_gpu/lab, made by
#               `bazel build //solutions/day1_gpu:lab`; a bundle's
#               gpu_selftest/tools/gpu_selftest/day1_gpu_lab does too)
#     --lab4    the day-4 lab (default: bazel-bin/solutions/day4_large_models/lab; a bundle's
#               gpu_selftest/tools/gpu_selftest/day4_large_models_lab)
#     --python  a Python with torch and torchvision that sees the GPU (default: python3)
#     --steps   timed steps per row (default 20)
set -euo pipefail
cd "$(dirname "$0")/../.."
lab=bazel-bin/solutions/day1_gpu/lab lab4=bazel-bin/solutions/day4_large_models/lab
python=python3 steps=20
while (($#)); do
  case $1 in
    --lab) lab=$2; shift 2 ;;
    --lab4) lab4=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    *) echo "gpu_compare: unknown option '$1' (--lab, --lab4, --python, --steps)" >&2; exit 2 ;;
  esac
done
[[ -x $lab ]] || { echo "gpu_compare: no day-1 lab at $lab (--lab)" >&2; exit 2; }
[[ -x $lab4 ]] || { echo "gpu_compare: no day-4 lab at $lab4 (--lab4)" >&2; exit 2; }
"$python" -c 'import sys, torch, torchvision; sys.exit(not torch.cuda.is_available())' || {
  echo "gpu_compare: $python has no torch and torchvision that see a GPU" >&2
  exit 2
}
echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
echo "| setting | PyTorch per s | lab per s | lab / PyTorch |"
echo "|---|---:|---:|---:|"

# row SETTING PYTORCH LAB: a table row with the ratio ("-" where a side has no figure).
row() {
  local ratio=-
  [[ $2 != - && $3 != - ]] && ratio=$(awk -v a="$2" -v b="$3" 'BEGIN {printf "%.2f", b / a}')
  echo "| $1 | $2 | $3 | $ratio |"
}

# measure MODEL BATCH SIZE AMP LAYOUT GRAPH: one row; AMP is f32 or bf16, LAYOUT nchw or
# channels-last, GRAPH eager or graph (the lab alone).
measure() {
  local model=$1 batch=$2 size=$3 amp=$4 layout=$5 graph=$6 theirs=- ours
  local flags=()
  [[ $amp == bf16 ]] && flags+=(--amp)
  [[ $layout == channels-last ]] && flags+=(--channels-last)
  if [[ $graph == eager ]]; then
    theirs=$("$python" bench/compare/torch_side.py train-step --device cuda --model "$model" \
      --batch "$batch" --size "$size" --steps "$steps" "${flags[@]}" |
      sed -n 's/^train_step: \([0-9.]*\).*/\1/p')
  else
    flags+=(--cuda-graphs)
  fi
  ours=$("$lab" --device cuda --model "$model" --batch-size "$batch" --image-size "$size" \
    --synthetic $((batch * (steps + 2))) --test --test-nsteps $((steps + 1)) --no-progress \
    "${flags[@]}" | sed -n 's/^training performance *\([0-9.]*\).*/\1/p')
  row "$model b$batch ${size}px $amp $layout $graph" "$theirs" "${ours:--}"
}

measure resnet50 128 224 f32 nchw eager
measure resnet50 128 224 bf16 nchw eager
measure resnet50 128 224 bf16 channels-last eager
measure vit-b16 64 224 bf16 nchw eager
measure smallnet 512 28 f32 nchw eager
measure smallnet 512 28 f32 nchw graph
measure smallnet 32 28 f32 nchw eager
measure smallnet 32 28 f32 nchw graph

# GPT-2 124M, batch 8 x 1024 tokens, bf16 autocast, eager: tokens/s and the lab's MFU of the
# GPU's dense bf16 peak.
gpt_batch=8
theirs=$("$python" bench/compare/torch_side.py gpt-train --device cuda --model gpt2 \
  --batch "$gpt_batch" --steps "$steps" --amp | sed -n 's/^gpt_train: \([0-9.]*\).*/\1/p')
ours=$("$lab4" --device cuda --model gpt2 --synthetic-tokens $((gpt_batch * 1024 * (steps + 4))) \
  --batch-size "$gpt_batch" --amp --test --test-nsteps $((steps + 1)) --no-progress)
mfu=$(grep -oE "MFU [0-9.]+%" <<<"$ours" || echo "no MFU")
row "gpt2 b$gpt_batch 1024 tokens bf16 eager, tokens/s (lab: $mfu)" "${theirs:--}" \
  "$(sed -n 's/^training performance *\([0-9.]*\).*/\1/p' <<<"$ours")"
