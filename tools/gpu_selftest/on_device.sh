#!/usr/bin/env bash
# A lent GPU node's few minutes in one command: from an unpacked bundle (make_bundle.sh), the
# self-test (every case, then its performance table), gpu_compare.sh (the labs beside PyTorch,
# where a Python with torch and torchvision sees the GPU) and host_waits_on_gpu.sh (with nsys's
# count where nsys is), each under a time limit, each one's whole output kept in OUT.
#   tools/gpu_selftest/on_device.sh BUNDLE OUT [--python PYTHON] [--limit SECONDS]
#     BUNDLE   an unpacked bundle's gpu_selftest folder (tar xJf bundle.tar.xz)
#     OUT      where the outputs go: nvidia-smi.txt, selftest.txt (and selftest_cases/, every
#              case's log), gpu_compare.txt, host_waits.txt
#     --python a Python with torch and torchvision (default: python3)
#     --limit  each part's limit in seconds (default 540)
# Run from the repository's root (gpu_compare.sh and its torch_side.py come from the tree).
# Prints each part's status, time and last lines; exits with the self-test's status.
set -uo pipefail
cd "$(dirname "$0")/../.."
(($# >= 2)) || {
  echo "usage: tools/gpu_selftest/on_device.sh BUNDLE OUT [--python PYTHON] [--limit SECONDS]" >&2
  exit 2
}
bundle=$(realpath "$1") out=$2 python=python3 limit=540
shift 2
while (($#)); do
  case $1 in
    --python) python=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    *) echo "on_device: unknown option '$1' (--python, --limit)" >&2; exit 2 ;;
  esac
done
[[ -x $bundle/run_selftest.sh ]] || {
  echo "on_device: $bundle is no unpacked bundle (no run_selftest.sh in it)" >&2
  exit 2
}
mkdir -p "$out" || exit 2
# The bundle's own shared libraries for the labs gpu_compare.sh and host_waits_on_gpu.sh start
# (run_selftest.sh sets this itself).
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# part NAME COMMAND...: runs it under the limit into OUT/NAME.txt; says its status and time.
part() {
  local name=$1 start=$SECONDS status
  shift
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.txt" 2>&1
  status=$?
  echo "== $name: exit $status after $((SECONDS - start)) s ($out/$name.txt)"
  tail -n 40 "$out/$name.txt"
  return "$status"
}

nvidia-smi >"$out/nvidia-smi.txt" 2>&1
head -n 12 "$out/nvidia-smi.txt"
part selftest "$bundle/run_selftest.sh" --logs "$out/selftest_cases"
selftest=$?
labs=$bundle/tools/gpu_selftest
if "$python" -c 'import sys, torch, torchvision; sys.exit(not torch.cuda.is_available())' \
  2>/dev/null; then
  part gpu_compare bench/compare/gpu_compare.sh --lab "$labs/day1_gpu_lab" \
    --lab4 "$labs/day4_large_models_lab" --python "$python"
else
  echo "== gpu_compare: not run ($python has no torch and torchvision that see a GPU)" |
    tee "$out/gpu_compare.txt"
fi
part host_waits "$bundle/host_waits_on_gpu.sh" --root "$bundle"
exit "$selftest"
