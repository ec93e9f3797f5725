#!/usr/bin/env bash
# //tools:info prints every row a trainee reads on a new machine, and a CUDA build without a
# visible GPU says that it falls back to the CPU exactly once.
set -euo pipefail
out=$("$1" 2>&1)
echo "$out"
for row in "CUDA " "default device" "oneDNN" "MPI" "OpenCV" "OpenMP threads"; do
  grep -q "^  $row" <<<"$out" || { echo "missing row: $row" >&2; exit 1; }
done
if grep -q "but no GPU is usable" <<<"$out"; then
  notes=$(grep -c "running on the CPU" <<<"$out")
  [[ "$notes" == 1 ]] || { echo "expected one CPU fallback note, got $notes" >&2; exit 1; }
  grep -q "^  default device  *cpu$" <<<"$out" || { echo "default device is not the CPU" >&2; exit 1; }
fi
