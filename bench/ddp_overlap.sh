#!/usr/bin/env bash
# How much of DDP's gradient all-reduce the backward pass hides: the day-2 lab on N ranks with
# the buckets reduced after backward (--no-overlap) and during it (--overlap), side by side,
# then hidden = 1 - exposed(overlap) / exposed(no overlap).
#   bazel run //bench:ddp_overlap -- [ranks, default 4] [lab flags]
set -euo pipefail
lab=${LAB:-solutions/day2_ddp/lab}
[[ -x $lab ]] || lab="${RUNFILES_DIR:-$0.runfiles}/course/$lab"
ranks=${1:-4}
[[ $ranks =~ ^[1-9][0-9]*$ ]] || { echo "ddp_overlap: the first argument is a rank count" >&2; exit 1; }
shift || true
flags=("$@")
((${#flags[@]})) || flags=(--model resnet18-cifar --image-size 32 --synthetic 4096
  --batch-size 16 --bucket-cap-mb 4 --test-nsteps 12)

run() {
  mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$ranks" "$lab" --test \
    --no-progress --num-workers 0 "${flags[@]}" "$@" 2>&1
}
field() { awk -v k="$1" '$0 ~ k {print $0}' <<<"$2"; }
exposed() { sed -n 's/.*per step, \([0-9.]*\) ms per step exposed.*/\1/p' <<<"$1"; }
step_ms() { awk '$1 == "step" {print $2}' <<<"$1"; }

echo "DDP on $ranks ranks: ${flags[*]}"
off=$(run --no-overlap)
on=$(run --overlap)
field "^training [a-z0-9-]* on" "$on"
field "^gradient sync" "$on"
printf '%-12s %14s %18s\n' overlap "step ms" "exposed sync ms"
printf '%-12s %14s %18s\n' off "$(step_ms "$off")" "$(exposed "$off")"
printf '%-12s %14s %18s\n' on "$(step_ms "$on")" "$(exposed "$on")"
awk -v off="$(exposed "$off")" -v on="$(exposed "$on")" \
  'BEGIN { printf "hidden by overlap: %.0f%% of the exposed all-reduce time\n", 100 * (1 - on / off) }'
