#!/usr/bin/env bash
# //tools:info prints every row a trainee reads on a new machine, and a CUDA build without a
# visible GPU says that it falls back to the CPU exactly once.
set -euo pipefail
out=$("$1" 2>&1)
echo "$out"
for row in "CUDA " "default device" "--amp computes in" "oneDNN" "MPI" "OpenCV" "OpenMP threads"; do
  grep -q "^  $row" <<<"$out" || { echo "missing row: $row" >&2; exit 1; }
done
if grep -q "no GPU is usable" <<<"$out"; then
  notes=$(grep -c "running on the CPU" <<<"$out")
  [[ "$notes" == 1 ]] || { echo "expected one CPU fallback note, got $notes" >&2; exit 1; }
  grep -q "^  default device  *cpu$" <<<"$out" || { echo "default device is not the CPU" >&2; exit 1; }
  grep -q "^  --amp computes in  *bf16$" <<<"$out" || { echo "--amp on the CPU is not bf16" >&2; exit 1; }
fi
# The scripts' modes: the GPUs CUDA may use (none here without a driver), and the node check,
# which names what is missing with exit 1 (a GPU node that passes says so with exit 0).
gpus=$("$1" --gpus)
[[ $gpus =~ ^[0-9]+$ ]] || { echo "--gpus printed '$gpus', not a count" >&2; exit 1; }
if [[ $gpus == 0 ]]; then
  if check=$("$1" --check-gpu 2>&1); then echo "--check-gpu passed without a GPU" >&2; exit 1; fi
  grep -qE "^error: (no NVIDIA driver|this build has no CUDA|.*no GPU)" <<<"$check" ||
    { echo "--check-gpu's message: $check" >&2; exit 1; }
fi
if "$1" --no-such-flag 2>/dev/null; then echo "an unknown flag was accepted" >&2; exit 1; fi
echo "ok: --gpus $gpus; --check-gpu: ${check:-passed}"
