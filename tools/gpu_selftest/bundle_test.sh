#!/usr/bin/env bash
# The GPU self-test's bundle as a GPU node without Bazel meets it: made by make_bundle.sh
# (at most 64 MiB), unpacked in an empty folder outside the repository, its CPU cases run from
# there with no access to the build tree (./test.sh runs this; it needs Bazel, so it is not a
# bazel test itself).
set -euo pipefail
cd "$(dirname "$0")/../.."
# The multi-rank cases' ranks share this machine: PMIx authenticates them by the local socket's
# credentials, not by munge's, whose daemon is not running here (.bazelrc says why it matters).
export PMIX_MCA_psec=native
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The build's own GPU architectures: a bundle for a cluster adds sm_90's (make_bundle.sh), which
# only lengthens nvcc's part of the build; the CPU cases run here are the same.
tools/gpu_selftest/make_bundle.sh --with-mpi "$work/bundle.tar.xz" build
mkdir "$work/node"
tar -C "$work/node" -xJf "$work/bundle.tar.xz"
if grep -rqs "$PWD" "$work/node/gpu_selftest/run_selftest.sh"; then
  echo "bundle_test: the bundle refers to the build tree" >&2
  exit 1
fi
(cd "$work/node" && env -u BUILD_WORKSPACE_DIRECTORY gpu_selftest/run_selftest.sh --cpu \
  --logs "$work/logs")
# --logs keeps a whole log per case, the new one-process day-4 case's among them.
cases=$(find "$work/logs" -name '*.log' | wc -l)
((cases >= 24)) || { echo "bundle_test: $cases case logs kept, expected 24" >&2; exit 1; }
grep -q "^training gpt-tiny" "$work/logs/day_4__GPT__amp_bf16__one_process_.log" || {
  echo "bundle_test: day 4's one-process log shows no training" >&2
  exit 1
}
# The image models train on the bundle's own Fashion-MNIST subset, which a GPU node without
# Debian's dataset package needs (the full set at /usr/share/datasets is not in the bundle).
grep -q "1024 images of 28 px" "$work/logs/day_4__CoAtNet__amp_bf16__channels_last_.log" || {
  echo "bundle_test: day 4's CoAtNet case did not train on the bundle's 1,024 images" >&2
  exit 1
}
# The one command of a lent GPU's few minutes (on_device.sh), on this node without a GPU: the
# self-test refuses with one message naming what is missing, gpu_compare.sh is not run, every
# part's output is kept, and the command fails.
if tools/gpu_selftest/on_device.sh "$work/node/gpu_selftest" "$work/on_device" \
  --python /bin/false >"$work/on_device.txt" 2>&1; then
  echo "bundle_test: on_device.sh passed on a node without a GPU" >&2
  exit 1
fi
grep -q "this node cannot run the bundle's GPU code" "$work/on_device/selftest.txt" &&
  grep -q "^== gpu_compare: not run" "$work/on_device/gpu_compare.txt" &&
  [[ -s $work/on_device/host_waits.txt ]] || {
  echo "bundle_test: on_device.sh's outputs:" >&2
  cat "$work/on_device.txt" >&2
  exit 1
}
