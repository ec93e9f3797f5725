#!/usr/bin/env bash
# 1-bit Adam and 1-bit LAMB against AdamW and LAMB, side by side in one run: the same model, data
# and seed per optimizer, on N ranks; the training loss of each epoch (the mean over its steps)
# and the bytes a rank sent per step (the lab's own count, warm-up included), as a Markdown table.
#   bazel run //bench:onebit_curves -- [--lab day4|day3] [--ranks 2] [--epochs 12]
#       [--freeze 25] [--optimizers "adamw onebit-adam lamb onebit-lamb"] [--images 1024]
#       [-- LAB FLAGS]
# day4: gpt-tiny on the embedded text, 8 steps an epoch; day3: ResNet-18 (CIFAR stem) on
# Fashion-MNIST, --images training images a rank an epoch. Both at lr 2e-3, weight decay 0.01, a
# 10-step warm-up then constant (the 1-bit optimizers' warm-up is --freeze steps of their base).
set -euo pipefail
runfiles=${RUNFILES_DIR:-$0.runfiles}/course
lab_name=day4 ranks=2 epochs=12 freeze=25 optimizers="adamw onebit-adam lamb onebit-lamb" images=""
launcher="mpirun --allow-run-as-root --oversubscribe --bind-to none"
extra=()
while (($#)); do
  case $1 in
    --lab) lab_name=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --freeze) freeze=$2; shift 2 ;;
    --optimizers) optimizers=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --launcher) launcher=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "onebit_curves: unknown option '$1'" >&2; exit 1 ;;
  esac
done
if [[ -n $images && ( $lab_name != day3 || ! $images =~ ^[1-9][0-9]*$ ) ]]; then
  echo "onebit_curves: --images takes a positive count of day 3's images, not '$images' with" \
    "--lab $lab_name" >&2
  exit 1
fi
case $lab_name in
  day4) lab=$runfiles/solutions/day4_large_models/lab
        flags=(--steps-per-epoch 8 --val-fraction 0.003 --sample-tokens 0 --lr-schedule constant
               --warmup-steps 10) ;;
  day3) lab=$runfiles/solutions/day3_data/lab
        flags=(--model resnet18-cifar --train-subset $((${images:-1024} * ranks)) --test-subset 256
               --batch-size 32 --schedule constant --warmup-epochs 0) ;;
  *) echo "onebit_curves: --lab must be day4 or day3, not '$lab_name'" >&2; exit 1 ;;
esac
export PMIX_MCA_psec=${PMIX_MCA_psec:-native}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for optimizer in $optimizers; do
  warmup=()
  [[ $optimizer == onebit-* ]] && warmup=(--freeze-step "$freeze")
  # shellcheck disable=SC2086
  $launcher -np "$ranks" "$lab" "${flags[@]}" --epochs "$epochs" --optimizer "$optimizer" \
    --lr 2e-3 --wd 0.01 "${warmup[@]}" --no-progress --metrics "$work/$optimizer.jsonl" \
    "${extra[@]}" >"$work/$optimizer.out" 2>&1 || {
    echo "onebit_curves: the $optimizer run failed:" >&2
    tail -5 "$work/$optimizer.out" >&2
    exit 1
  }
done
python3 - "$work" "$ranks" "$freeze" $optimizers <<'PY'
import json, re, sys
work, ranks, freeze, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
curves, sent, steps = {}, {}, {}
for name in names:
    rows = [json.loads(line) for line in open(f"{work}/{name}.jsonl")]
    curves[name] = [r["train_loss_mean"] for r in rows]
    steps[name] = [r["step"] for r in rows]
    text = open(f"{work}/{name}.out").read()
    found = re.search(r"communication per step on rank 0: ([0-9.]+) (KiB|MiB)", text)
    sent[name] = float(found.group(1)) * (1 if found.group(2) == "MiB" else 1 / 1024) if found else 0.0
print(f"training loss per epoch (mean over its steps), {ranks} ranks, 1-bit warm-up {freeze} steps\n")
print("| epoch | step | " + " | ".join(names) + " |")
print("|---|---|" + "---|" * len(names))
for e in range(len(curves[names[0]])):
    print(f"| {e + 1} | {steps[names[0]][e]} | " + " | ".join(f"{curves[n][e]:.3f}" for n in names) + " |")
print("| MiB sent per step | | " + " | ".join(f"{sent[n]:.3f}" for n in names) + " |")
# A 1-bit run's compressed steps alone: its total less its warm-up, which sends what its base
# optimizer's steps send (the run beside it).
total = steps[names[0]][-1]
row = []
for n in names:
    base = n.removeprefix("onebit-").replace("adam", "adamw")
    if n.startswith("onebit-") and base in sent and total > int(freeze):
        compressed = (sent[n] * total - sent[base] * int(freeze)) / (total - int(freeze))
        row.append(f"{compressed:.3f} ({sent[base] / compressed:.1f}x less)")
    else:
        row.append("")
print("| MiB per compressed step | | " + " | ".join(row) + " |")
PY
