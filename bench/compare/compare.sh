#!/usr/bin/env bash
# The project against PyTorch on this machine, side by side in one run, with ratios:
#   1. training images/s, same network, batch, image size, optimizer and thread count, f32,
#      NCHW and channels-last (the small network and ResNet-18);
#   2. DataLoader images/s over an ImageFolder of 30,000 JPEGs at steady state (persistent
#      workers, after a warm-up epoch), same transforms and workers;
#   3. all-reduce time (MPI against torch.distributed's gloo) and the DDP step, on 2 ranks;
#   4. where a training step's time goes: torch.profiler's operators, the project's phases,
#      and the small network's layers timed alone on both sides;
#   5. day 3's storage formats at steady state (30,000 Fashion-MNIST JPEGs, persistent
#      workers, a warm-up epoch): torchvision's ImageFolder and webdataset's shards against the
#      project's readers of the same files;
#   6. the race's reference recipe (day3_data/README.md) trained on Fashion-MNIST on both
#      sides: test accuracy after every epoch and the time to reach 91%;
#   7. day 4's GPT training tokens/s, gpt-tiny and gpt-mini, AdamW, batch 16;
# and the numerical parity of one training step (forward logits, loss, every gradient) for the
# small network, ResNet-18 and a 2-layer GPT (with one AdamW update) in f32: the project writes
# its weights and batch, PyTorch loads them and runs the same step.
#   bench/compare/compare.sh [--parity-only | --loaders-only | --race-only | --gpt-only]
#                            [--threads N] [--seed N]
# --seed is the race's seed on both sides (weights and order; 0 by default): one seed's run
# crosses 91% at one epoch or the next by chance, so repeated comparisons take one seed each.
# PyTorch and torchvision come from PyPI into .venv-compare/ (made on the first run; only this
# comparison uses them, never the build or the tests).
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=2 seed=0 parity_only=0 loaders_only=0 race_only=0 gpt_only=0
while (($#)); do
  case $1 in
    --parity-only) parity_only=1; shift ;;
    --loaders-only) loaders_only=1; shift ;;
    --race-only) race_only=1; shift ;;
    --gpt-only) gpt_only=1; shift ;;
    --threads) threads=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    *) echo "compare: unknown option '$1' (--parity-only, --loaders-only, --race-only," \
      "--gpt-only, --threads N, --seed N)" >&2; exit 1 ;;
  esac
done
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "compare: --threads takes a positive number" >&2; exit 1; }
[[ $seed =~ ^[0-9]+$ ]] || { echo "compare: --seed takes a number from 0" >&2; exit 1; }

venv=.venv-compare
if [[ ! -x $venv/bin/python ]] ||
  ! "$venv/bin/python" -c "import torch, torchvision, webdataset" 2>/dev/null; then
  echo "== creating $venv with torch, torchvision and webdataset from PyPI (once)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q torch torchvision webdataset
fi
py=("$venv/bin/python" bench/compare/torch_side.py)
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

echo "== building the project's side"
# A failed build stops here: comparing stale binaries would report figures of older code.
if ! bazel build -c opt //bench/compare:all //solutions/day1_gpu:lab //solutions/day2_ddp:lab \
  //solutions/day3_data:race //solutions/day4_large_models:lab \
  //bench:allreduce_bench //bench:layers_bench //tools:make_image_folder //tools:make_dataset; then
  echo "compare: the build failed; nothing was measured" >&2
  exit 1
fi
bin=bazel-bin
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
echo "   torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)'), $(mpirun --version | head -1)"

value() { sed -n "s/^$1: \([0-9.]*\).*/\1/p" <<<"$2"; }
# A lab's "training performance" figure (images/s or tokens/s) from its output.
lab_rate() { sed -n 's/^training performance *\([0-9.]*\).*/\1/p' <<<"$1"; }
larger() { awk -v a="$1" -v b="$2" 'BEGIN { print (b > a ? b : a) }'; }
row() {  # row MEASURE UNIT TORCH PROJECT: a table row with project / torch
  awk -v m="$1" -v u="$2" -v t="$3" -v p="$4" \
    'BEGIN { printf "| %-44s | %10.1f | %10.1f | %6.2f |\n", m " (" u ")", t, p, p / t }'
}

loader_formats() {
  echo "== day 3's storage formats at steady state: 30,000 Fashion-MNIST JPEGs, 2 workers,"
  echo "   batch 256, persistent workers, the second of two epochs (decoding and normalisation)"
  echo "| measure | PyTorch | project | project / PyTorch |"
  echo "|---|---:|---:|---:|"
  local format theirs ours
  for format in folder tar; do
    "$bin/tools/make_dataset" --to "$format" --out "$work/$format" --train 30000 --val 100 \
      --shard-samples 2000 >/dev/null
    theirs=$("${py[@]}" loader-formats --format "$format" --data-dir "$work/$format")
    ours=$("$bin/bench/compare/loader_throughput" --format "$format" --data-dir "$work/$format" \
      --batch-size 256 --num-workers 2 --epochs 2)
    row "$format, 28x28 JPEGs" "images/s" "$(value loader "$theirs")" "$(value loader "$ours")"
    row "$format, first batch of an epoch" "ms" "$(value first_batch_ms "$theirs")" \
      "$(value first_batch_ms "$ours")"
  done
}
# The race's reference recipe, 10 epochs of the 60,000 images, one side after the other.
race_reference() {
  local target=0.91
  echo "== the race's reference recipe on Fashion-MNIST: small network, batch 128, SGD, one-cycle"
  echo "   to lr 0.1 over 10 epochs, label smoothing 0.1, $threads threads, seed $seed; test"
  echo "   accuracy by epoch"
  echo "   loading: PyTorch indexes normalised tensors in memory in the training thread; the"
  echo "   project's DataLoader normalises each batch in its default worker threads (the rank's"
  echo "   compute threads less one, 1 to 8: common/data/open_dataset.h)"
  local theirs ours
  theirs=$("${py[@]}" race --threads "$threads" --epochs 10 --seed "$seed")
  OMP_NUM_THREADS=$threads "$bin/solutions/day3_data/race" --epochs 10 --seed "$seed" --no-progress \
    --device cpu --metrics "$work/race.jsonl" >/dev/null
  ours=$(grep '"epoch"' "$work/race.jsonl" | sed -E \
    's/.*"elapsed_s":([0-9.]+).*"epoch":([0-9]+).*"test_accuracy":([0-9.]+).*/race epoch \2: \3 at \1 s/')
  echo "| epoch | PyTorch acc. | PyTorch s | project acc. | project s |"
  echo "|---:|---:|---:|---:|---:|"
  join <(sed -n 's/^race epoch \([0-9]*\): \([0-9.]*\) at \([0-9.]*\) s/\1 \2 \3/p' <<<"$theirs") \
    <(sed -n 's/^race epoch \([0-9]*\): \([0-9.]*\) at \([0-9.]*\) s/\1 \2 \3/p' <<<"$ours") |
    awk '{ printf "| %d | %.2f%% | %.0f | %.2f%% | %.0f |\n", $1, 100 * $2, $3, 100 * $4, $5 }'
  first_at() {  # the seconds at which a side's test accuracy first reached the target
    awk -v t="$target" '$4 >= t && !done { printf "%.0f\n", $6; done = 1 }' <<<"$1"
  }
  local t_theirs t_ours
  t_theirs=$(first_at "$theirs")
  t_ours=$(first_at "$ours")
  echo "time to $target test accuracy: PyTorch ${t_theirs:-not reached} s," \
    "project ${t_ours:-not reached} s"
  if [[ -n $t_theirs && -n $t_ours ]]; then
    awk -v t="$t_theirs" -v p="$t_ours" 'BEGIN { printf "project / PyTorch time: %.2f\n", p / t }'
  fi
}
# Day 4's GPT presets: the same blocks, context, batch and AdamW on both sides. PyTorch trains on
# random byte windows; the project on the lab's embedded text, loading excluded from its figure.
# The sides take turns three times and each keeps its best run: a shared machine's speed drifts
# over tens of seconds (one run after the other gave ratios from 0.82 to 1.24), and the drift
# only ever slows a run down.
gpt_rows() {
  echo "== day 4's GPT training, batch 16 windows of the preset's context, AdamW, $threads threads,"
  echo "   the best of three turns each"
  echo "| measure | PyTorch | project | project / PyTorch |"
  echo "|---|---:|---:|---:|"
  local name turn theirs ours best_theirs best_ours
  for name in gpt-tiny gpt-mini; do
    best_theirs=0 best_ours=0
    for turn in 1 2 3; do
      theirs=$(OMP_NUM_THREADS=$threads "${py[@]}" gpt-train --model "$name" --batch 16 \
        --steps 10 --threads "$threads")
      ours=$(OMP_NUM_THREADS=$threads "$bin/solutions/day4_large_models/lab" --model "$name" \
        --batch-size 16 --test --test-nsteps 11 --device cpu --no-progress)
      best_theirs=$(larger "$best_theirs" "$(value gpt_train "$theirs")")
      best_ours=$(larger "$best_ours" "$(lab_rate "$ours")")
    done
    row "train $name b16" "tokens/s" "$best_theirs" "$best_ours"
  done
}
if ((gpt_only)); then
  gpt_rows
  exit 0
fi
if ((loaders_only)); then
  loader_formats
  exit 0
fi
if ((race_only)); then
  race_reference
  exit 0
fi

echo "== parity of one f32 training step (the project's weights and batch, loaded by PyTorch;"
echo "   the repository's f32 rule |project - torch| <= 1e-5 + 1e-5 |torch|)"
parity_failed=0
for model in smallnet:28 resnet18:64 vit-micro:28 coatnet-micro:28; do
  IFS=: read -r name size <<<"$model"
  "$bin/bench/compare/parity_step" --model "$name" --image-size "$size" --batch 8 \
    --out "$work/$name.step" >/dev/null
  "${py[@]}" parity "$work/$name.step" || parity_failed=1
done
# 2-layer decoders, GPT-2 and Llama: logits, loss, every gradient and the parameters after one
# AdamW step.
for name in gpt-parity llama-parity; do
  "$bin/bench/compare/parity_step" --model "$name" --batch 2 --out "$work/$name.step" >/dev/null
  "${py[@]}" parity "$work/$name.step" || parity_failed=1
done
((parity_only)) && exit "$parity_failed"

echo
echo "Training rows: PyTorch reuses one random batch; the project draws --synthetic images through"
echo "its DataLoader (its default workers: the compute threads less one, 1 to 8), loading"
echo "excluded from its figure."
echo "| measure | PyTorch | project | project / PyTorch |"
echo "|---|---:|---:|---:|"
export OMP_NUM_THREADS=$threads
for setting in "smallnet 128 28" "resnet18 32 64"; do
  read -r name batch size <<<"$setting"
  for layout in nchw channels-last; do
    flag=()
    [[ $layout == channels-last ]] && flag=(--channels-last)
    theirs=$("${py[@]}" train-step --model "$name" --batch "$batch" --size "$size" --steps 20 \
      --threads "$threads" "${flag[@]}")
    ours=$("$bin/solutions/day1_gpu/lab" --model "$name" --batch-size "$batch" --image-size "$size" \
      --synthetic 4096 --test --test-nsteps 21 --device cpu --no-progress "${flag[@]}")
    row "train $name b$batch ${size}px $layout" "images/s" "$(value train_step "$theirs")" \
      "$(lab_rate "$ours")"
  done
done

# At steady state: 30,000 images, persistent workers, the second of two epochs (a 3,000-image
# epoch measured PyTorch's worker start-up more than its loading).
"$bin/tools/make_image_folder" --out "$work/images" --train 30000 --val 10 --size 64 >/dev/null
theirs=$("${py[@]}" loader --data-dir "$work/images/train" --batch 64 --size 56 --workers 2 \
  --epochs 2)
ours=$("$bin/bench/compare/loader_throughput" --data-dir "$work/images" --batch-size 64 \
  --image-size 56 --num-workers 2 --augment --epochs 2)
row "DataLoader, 30,000 JPEGs 64px -> 56px, 2 workers, 2nd epoch" "images/s" \
  "$(value loader "$theirs")" "$(value loader "$ours")"

export OMP_NUM_THREADS=1
theirs=$("${py[@]}" allreduce --ranks 2)
ours=$("${mpirun[@]}" -np 2 "$bin/bench/allreduce_bench")
for nbytes in 1024 65536 1048576 16777216 67108864; do
  # allreduce_bench names sizes as "1.00 KiB", "64.00 MiB".
  label=$(awk -v b="$nbytes" \
    'BEGIN { if (b < 1048576) printf "%.2f KiB", b / 1024; else printf "%.2f MiB", b / 1048576 }')
  mine=$(awk -v l="$label" '$1 " " $2 == l { print $3 }' <<<"$ours")
  row "all-reduce ${label/.00/}, 2 ranks (MPI vs gloo)" "us" \
    "$(value "allreduce $nbytes" "$theirs")" "$mine"
done
theirs=$("${py[@]}" ddp --ranks 2 --batch 64 --steps 20)
ours=$("${mpirun[@]}" -np 2 "$bin/solutions/day2_ddp/lab" --batch-size 64 --synthetic 4096 --test \
  --test-nsteps 21 --num-workers 0 --no-progress)
row "DDP step, small network, 2 ranks x b64" "ms" "$(value ddp_step "$theirs")" \
  "$(awk '$1 == "step" {print $2}' <<<"$ours")"
echo
gpt_rows
echo
echo "project / PyTorch above 1 means the project is faster for images/s and tokens/s, slower"
echo "for us and ms."
echo
loader_formats
echo
race_reference

echo
echo "== where the training step's time goes (small network, batch 128, NCHW, $threads threads)"
export OMP_NUM_THREADS=$threads
"${py[@]}" profile --threads "$threads" 2>/dev/null | sed 's/^profile /  PyTorch: /'
"$bin/solutions/day1_gpu/lab" --batch-size 128 --synthetic 4096 --test --test-nsteps 21 \
  --device cpu --no-progress | grep -E "^(forward|backward|optimizer|step) " | sed 's/^/  project: /'
echo "second-stage layers, forward + backward (ms):"
echo "| layer | PyTorch | project |"
echo "|---|---:|---:|"
theirs=$("${py[@]}" layers --threads "$threads")
ours=$("$bin/bench/layers_bench" --benchmark_filter='/0/' 2>/dev/null)
for layer in conv:Conv3x3 batchnorm:BatchNorm maxpool:MaxPool2 relu:Relu; do
  printf '| %s | %s | %s |\n' "${layer%%:*}" "$(value "layer ${layer%%:*}" "$theirs")" \
    "$(awk -v b="BM_${layer#*:}" 'index($1, b) == 1 { print $2 }' <<<"$ours")"
done
exit "$parity_failed"
