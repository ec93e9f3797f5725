#!/usr/bin/env bash
# Before a GPU node's minutes go to measurements: what the node has for the bundle's binaries.
# The GPU and its driver (nvidia-smi), the library folders searched (COURSE_NODE_LIBRARY_DIRS,
# set by on_device.sh, then LD_LIBRARY_PATH and the system's), where each CUDA library the
# binaries need resolves, `ldd` of the main binaries, the versions CUDA, cuDNN and NCCL report
# (tools/info) and whether the node runs the build's GPU code (info --check-gpu). Ends with one
# line, "preflight: ok ..." or "preflight: missing ..." naming what is missing.
#   tools/gpu_selftest/preflight.sh BUNDLE [--dry-run]
#     BUNDLE     an unpacked bundle's gpu_selftest folder
#     --dry-run  a node without a GPU: the libraries must resolve, the GPU check may fail
set -uo pipefail
bundle=${1:?usage: tools/gpu_selftest/preflight.sh BUNDLE [--dry-run]}
dry_run=false
[[ ${2:-} == --dry-run ]] && dry_run=true
binaries=(tools/gpu_selftest/day1_gpu_lab tools/gpu_selftest/day4_large_models_lab tools/info
  common/kernels/tests/tests)
cuda_libraries='libcudart|libcublas|libcublasLt|libcudnn|libnccl|libnvjpeg|libnvrtc|libcuda\.'

echo "== the GPU and its driver"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 | head -n 9
else
  echo "no nvidia-smi on the PATH"
fi
echo "== library folders searched, in order"
IFS=: read -ra searched <<<"${LD_LIBRARY_PATH:-}"
for dir in "${searched[@]}"; do
  [[ -n $dir ]] && echo "  $dir$([[ -d $dir ]] || echo ' (absent)')"
done
echo "  then the system's (ldconfig)"

echo "== the CUDA libraries each main binary resolves (ldd)"
missing=()
for binary in "${binaries[@]}"; do
  path=$bundle/$binary
  if [[ ! -x $path ]]; then
    missing+=("$binary (not in the bundle)")
    continue
  fi
  echo "$binary:"
  resolved=$(ldd "$path" 2>&1)
  grep -E "$cuda_libraries|not found" <<<"$resolved" | sed 's/ (0x[0-9a-f]*)$//; s/^[[:space:]]*/  /'
  while read -r library; do
    [[ -n $library ]] && missing+=("$library (needed by $binary)")
  done < <(awk '/not found/ {print $1}' <<<"$resolved")
done

echo "== versions (tools/info)"
versions=$("$bundle/tools/info" 2>&1)
echo "$versions"
echo "== info --check-gpu"
check=$("$bundle/tools/info" --check-gpu 2>&1)
check_status=$?
echo "$check"

summary() {  # one line of what tools/info reported
  grep -E "^  (CUDA runtime|cuDNN|NCCL|GPU 0) " <<<"$versions" | sed 's/^  //; s/  */ /g' |
    paste -sd';' - | sed 's/;/; /g'
}
if ((${#missing[@]})); then
  echo "preflight: missing $(printf '%s, ' "${missing[@]}" | sed 's/, $//'): searched ${LD_LIBRARY_PATH:-} and the system's"
  exit 1
fi
if ((check_status != 0)); then
  if $dry_run; then
    echo "preflight: ok for a dry run (every library resolves; no GPU: ${check#error: }); $(summary)"
    exit 0
  fi
  echo "preflight: ${check#error: }"
  exit 1
fi
echo "preflight: ok ($(summary))"
