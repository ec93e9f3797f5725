#!/usr/bin/env bash
# TP2.1, the DataLoader flag sweep: runs the day-2 lab (--test) over worker counts, prefetch
# factors, persistent workers and pinned memory, and prints load time per step, the wait for
# the first batch, throughput and peak host memory as a table (and a CSV).
#   bazel run //day2_ddp:loader_sweep -- [lab flags]
# By default the lab reads what makes loading cost on any machine, as the course's ImageNet runs
# do: 2,560 JPEGs of 256 x 256 (Fashion-MNIST, written by //tools:make_image_folder into a
# temporary folder), decoded, augmented and resized to 32 x 32 for the small network, in batches
# of 64. Lab flags given replace these.
set -euo pipefail
runfiles="${RUNFILES_DIR:-$0.runfiles}/course"
lab=${LAB:-solutions/day2_ddp/lab}
[[ -x $lab ]] || lab="$runfiles/$lab"
extra=("$@")
if ((${#extra[@]} == 0)); then
  make_folder=${MAKE_IMAGE_FOLDER:-tools/make_image_folder}
  [[ -x $make_folder ]] || make_folder="$runfiles/$make_folder"
  images=$(mktemp -d)
  trap 'rm -rf "$images"' EXIT
  "$make_folder" --out "$images/jpeg" --train 2560 --val 64 --size 256 >/dev/null
  extra=(--data-dir "$images/jpeg" --image-size 32 --batch-size 64 --augment)
fi
csv=${BUILD_WORKING_DIRECTORY:-.}/loader_sweep.csv

settings=(
  "0 2 on on" "1 2 on on" "2 2 on on" "4 2 on on" "8 2 on on"
  "4 1 on on" "4 4 on on" "4 2 off on" "4 2 on off"
)
printf '%-8s %-9s %-11s %-11s %13s %15s %10s %16s\n' workers prefetch persistent pin_memory \
  "load ms/step" "first batch ms" "images/s" "host memory MiB"
echo "workers,prefetch,persistent,pin_memory,load_ms,first_batch_ms,images_per_s,host_mib" >"$csv"
for setting in "${settings[@]}"; do
  read -r workers prefetch persistent pin <<<"$setting"
  out=$("$lab" --test --test-nsteps 40 --no-progress --num-workers "$workers" \
    --prefetch-factor "$prefetch" "--$([[ $persistent == on ]] || echo no-)persistent-workers" \
    "--$([[ $pin == on ]] || echo no-)pin-memory" "${extra[@]}" 2>&1) || {
    echo "the lab failed for: $setting" >&2
    echo "$out" >&2
    exit 1
  }
  load=$(awk '$1 == "load" {print $2}' <<<"$out")
  first=$(awk '$1 == "first" && $2 == "batch" {print $3}' <<<"$out")
  speed=$(awk '$1 == "total" && $2 == "performance" {print $3}' <<<"$out")
  host=$(awk '$1 == "host" && $2 == "memory" {print $4}' <<<"$out")
  printf '%-8s %-9s %-11s %-11s %13s %15s %10s %16s\n' "$workers" "$prefetch" "$persistent" \
    "$pin" "$load" "$first" "$speed" "$host"
  echo "$workers,$prefetch,$persistent,$pin,$load,$first,$speed,$host" >>"$csv"
done
echo "wrote $csv"
