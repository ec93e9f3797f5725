#!/usr/bin/env bash
# On a GPU node: the host's waits for the GPU in day 1's and day 4's steps, counted two ways.
#   1. The labs' own count (common/tensor/host_waits.h, the line "host waits for cuda:0 in
#      steps 2..N"), which must be 0, as the simulated accelerator's is in ./test.sh.
#   2. With Nsight Systems (nsys on the PATH): the CUDA API calls that block the host
#      (cudaStreamSynchronize, cudaEventSynchronize, cudaDeviceSynchronize, synchronous
#      cudaMemcpy) of a run of 20 steps and of one of 40, both reading the loss every 10 steps:
#      their difference is what 20 more steps cost, which must be the two loss reads' own (the
#      lab's count of those reads' waits, in its line), nothing inside the steps.
# Day 1 trains ResNet-50 in bf16 channels-last at batch 64, day 4 gpt-mini at batch 8.
#   tools/gpu_selftest/host_waits_on_gpu.sh [--root DIR] [--dry-run]
#     --root DIR  a self-test bundle's gpu_selftest folder, or bazel-bin of a CUDA build
#                 (default: bazel-bin; the labs are solutions/day1_gpu/lab and
#                 solutions/day4_large_models/lab there, tools/gpu_selftest/day*_lab in a bundle)
#     --dry-run   on the simulated accelerator, ResNet-50 at 32 px batch 4 and gpt-tiny: the
#                 labs' count checked where no GPU is
set -uo pipefail
root=bazel-bin dry_run=false
while (($#)); do
  case $1 in
    --root) root=$2; shift 2 ;;
    --dry-run) dry_run=true; shift ;;
    *) echo "host_waits_on_gpu: unknown option '$1' (--root, --dry-run)" >&2; exit 2 ;;
  esac
done
day1=$root/solutions/day1_gpu/lab day4=$root/solutions/day4_large_models/lab
[[ -x $day1 ]] || day1=$root/tools/gpu_selftest/day1_gpu_lab
[[ -x $day4 ]] || day4=$root/tools/gpu_selftest/day4_large_models_lab
[[ -x $day1 && -x $day4 ]] || { echo "host_waits_on_gpu: no labs under $root" >&2; exit 2; }
text=()
[[ -d $root/text ]] && text=(--text-dir "$root/text")  # a bundle's own
runs=(
  "day 1, ResNet-50 bf16 channels-last|$day1 --model resnet50 --synthetic 4096 --image-size 224 -b 64 --amp --amp-dtype bf16 --channels-last --device cuda --no-progress --test --log-every 10"
  "day 4, gpt-mini|$day4 --model gpt-mini -b 8 --device cuda --no-progress --sample-tokens 0 --test --log-every 10 ${text[*]}"
)
if $dry_run; then
  runs=(
    "day 1, ResNet-50 bf16 channels-last, 32 px|$day1 --model resnet50 --synthetic 256 --image-size 32 -b 4 --amp --amp-dtype bf16 --channels-last --device sim --no-progress --test --log-every 10"
    "day 4, gpt-tiny|$day4 --model gpt-tiny -b 4 --device sim --no-progress --sample-tokens 0 --test --log-every 10 ${text[*]}"
  )
fi
status=0
blocking='cudaStreamSynchronize|cudaEventSynchronize|cudaDeviceSynchronize|cudaMemcpy(_v[0-9]+)?$'
# api_calls REPORT: the blocking CUDA API calls of an nsys report.
api_calls() {
  nsys stats --report cuda_api_sum --format csv --quiet "$1" 2>/dev/null |
    awk -F, -v re="$blocking" 'NR > 1 { name = $NF; gsub(/"/, "", name); if (name ~ re) n += $3 }
                               END { print n + 0 }'
}
for entry in "${runs[@]}"; do
  name=${entry%%|*} command=${entry#*|}
  out=$($command --test-nsteps 20 2>&1) || { echo "$name: the run failed:"; echo "$out" | tail -5; status=1; continue; }
  line=$(grep "^host waits for " <<<"$out")
  echo "$name: $line"
  grep -qE ' steps 2\.\.[0-9]+: 0 at most' <<<"$line" || status=1
  command -v nsys >/dev/null || { echo "  (no nsys on the PATH: the API count is skipped)"; continue; }
  work=$(mktemp -d)
  for steps in 20 40; do
    nsys profile --trace cuda,nvtx --force-overwrite true --output "$work/run$steps" \
      $command --test-nsteps "$steps" >/dev/null 2>&1 || { echo "  nsys run of $steps steps failed"; status=1; }
  done
  extra=$(($(api_calls "$work/run40.nsys-rep") - $(api_calls "$work/run20.nsys-rep")))
  # Two more loss reads in 20 more steps: what the lab counts for two of them.
  reads=$(sed -n 's/.*in the loss reads: \([0-9]*\) reads*, \([0-9]*\) synchroni[sz]ations*.*/\1 \2/p' <<<"$line")
  per_read=$(awk '{print ($1 + $2) / 2}' <<<"$reads")
  echo "  nsys: blocking CUDA calls in 20 more steps: $extra (two loss reads: $(awk -v p="$per_read" 'BEGIN {print 2 * p}'))"
  awk -v e="$extra" -v p="$per_read" 'BEGIN { exit !(e <= 2 * p) }' || status=1
  rm -rf "$work"
done
exit $status
