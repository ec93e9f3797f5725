#!/usr/bin/env bash
# The optimizer step fused into the backward pass against the usual step, side by side in one
# run: the day-4 lab's peak memory (the allocator's) and step time, on 1 and N ranks, with and
# without --optimizer-in-backward, for each model; a Markdown table with the difference.
#   bazel run //bench:optimizer_in_backward -- [--ranks "1 2"] [--models "gpt-tiny gpt-mini"]
#       [--steps 20] [-- LAB FLAGS]
set -euo pipefail
runfiles=${RUNFILES_DIR:-$0.runfiles}/course
lab=$runfiles/solutions/day4_large_models/lab
ranks="1 2" models="gpt-tiny gpt-mini" steps=20
launcher="mpirun --allow-run-as-root --oversubscribe --bind-to none"
extra=()
while (($#)); do
  case $1 in
    --ranks) ranks=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --launcher) launcher=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "optimizer_in_backward: unknown option '$1'" >&2; exit 1 ;;
  esac
done
export PMIX_MCA_psec=${PMIX_MCA_psec:-native}
# "peak MiB step ms" of one run.
measure() {
  local out
  # shellcheck disable=SC2086
  out=$($launcher -np "$1" "$lab" --model "$2" --test --test-nsteps "$steps" --sample-tokens 0 \
    --no-progress "${@:3}" "${extra[@]}" 2>&1) || {
    echo "optimizer_in_backward: the run failed:" >&2
    tail -5 <<<"$out" >&2
    exit 1
  }
  awk '/^max memory allocated/ { peak = $4 } /^step / { step = $2 } END { print peak, step }' \
    <<<"$out"
}
echo "| model | ranks | peak, usual step (MiB) | peak, in backward (MiB) | saved | step, usual (ms) | step, in backward (ms) |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for model in $models; do
  for n in $ranks; do
    read -r usual_peak usual_step < <(measure "$n" "$model")
    read -r fused_peak fused_step < <(measure "$n" "$model" --optimizer-in-backward)
    saved=$(awk -v a="$usual_peak" -v b="$fused_peak" 'BEGIN { printf "%.2f MiB (%.0f%%)", a - b, 100 * (a - b) / a }')
    echo "| $model | $n | $usual_peak | $fused_peak | $saved | $usual_step | $fused_step |"
  done
done
