#!/usr/bin/env bash
# Day 3's storage formats side by side at steady state: the same Fashion-MNIST images (30,000 by
# default) written by //tools:make_dataset as an ImageFolder of JPEGs, WebDataset tar shards, a
# packed file of JPEG bytes and one of decoded pixels, and read by the DataLoader with persistent
# workers over two epochs (the first a warm-up) in each format's own order; the in-memory IDX
# files as the ceiling. Prints a Markdown table: stored size, first-batch latency, images/s,
# MB/s; then the same with RandAugment(2, 9) in the workers.
#   bench/loader_formats.sh [--images N] [--workers W] [--batch B]
set -euo pipefail
cd "$(dirname "$0")/.."
images=30000 workers=2 batch=256
while (($#)); do
  case $1 in
    --images) images=$2; shift 2 ;;
    --workers) workers=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    *) echo "loader_formats: unknown option '$1' (--images N, --workers W, --batch B)" >&2; exit 1 ;;
  esac
done
for n in "$images" "$workers" "$batch"; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "loader_formats: options take whole numbers" >&2; exit 1; }
done
bazel build -c opt --noshow_progress --ui_event_filters=-info //tools:make_dataset \
  //bench/compare:loader_throughput
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make=(bazel-bin/tools/make_dataset --train "$images" --val 100)
"${make[@]}" --to folder --out "$work/folder" >/dev/null
"${make[@]}" --to tar --out "$work/tar" >/dev/null
"${make[@]}" --to packed --out "$work/packed" >/dev/null
"${make[@]}" --to packed --encoding pixels --out "$work/pixels" >/dev/null

measure() {  # measure LABEL DATA_DIR [loader flags]: one table row
  local label=$1 dir=$2 out
  shift 2
  out=$(bazel-bin/bench/compare/loader_throughput --data-dir "$dir" --batch-size "$batch" \
    --num-workers "$workers" --epochs 2 "$@")
  awk -v label="$label" '
    /training images/ { for (i = 1; i <= NF; ++i) if ($i == "MB") mb = $(i - 1); n = $2 }
    /^epoch 0/ { warm = $6 }
    /^epoch 1/ { first = $5; rate = $7; mbs = $9 }
    END { printf "| %-28s | %6s | %6.1f | %6.1f | %6.1f | %8.1f | %6.1f |\n", label, n, mb, warm,
          first, rate, mbs }' <<<"$out"
}
echo "$(nproc) cores, $workers workers, batch $batch, $images training images of 28x28"
echo
echo "| format | images | stored MB | first batch, warm-up (ms) | first batch (ms) | images/s | MB/s |"
echo "|---|---:|---:|---:|---:|---:|---:|"
measure "IDX in memory (60,000)" /usr/share/datasets/fashion-mnist
measure "ImageFolder of JPEGs" "$work/folder"
measure "WebDataset tar shards" "$work/tar"
measure "packed, JPEG bytes" "$work/packed"
measure "packed, pixels" "$work/pixels"
measure "packed, pixels + RandAugment" "$work/pixels" --auto-augment randaugment
measure "tar shards + RandAugment" "$work/tar" --auto-augment randaugment
