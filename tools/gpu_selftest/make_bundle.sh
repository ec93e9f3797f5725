#!/usr/bin/env bash
# Builds the GPU self-test's binaries and packs them, with the shared libraries they need that
# are neither the CUDA/driver libraries (the GPU node's own) nor the C library's, into one
# archive for a GPU node without Bazel or network:
#   tools/gpu_selftest/make_bundle.sh [OUT.tar.xz] [CUDA_ARCHS]
#     OUT         the archive (default: gpu_selftest_bundle.tar.xz)
#     CUDA_ARCHS  the GPUs' compute capabilities, e.g. "80,90" (default: the build's)
# On the node: tar xJf OUT && gpu_selftest/run_selftest.sh (MPI from the node: module load openmpi).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(realpath -m "${1:-gpu_selftest_bundle.tar.xz}")
archs=${2:-}
limit_mib=64

build=(bazel build //tools/gpu_selftest)
[[ -n $archs ]] && build+=(--repo_env=COURSE_CUDA_ARCHS="$archs")
"${build[@]}" >&2

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
bundle=$stage/gpu_selftest
mkdir -p "$bundle/lib"
# The runfiles tree: every binary at its workspace path, the tests' shared objects beside them.
cp -rL bazel-bin/tools/gpu_selftest/gpu_selftest.runfiles/course/. "$bundle/"
cp tools/gpu_selftest/run_selftest.sh "$bundle/run_selftest.sh"

# System libraries the binaries load, less those the node must provide itself.
node_provided='^lib(c|m|dl|rt|pthread|resolv|util)\.so|^ld-linux|^libcuda\.|^libcudart|^libcublas|^libcudnn|^libnccl|^libnvrtc|^libnvidia|^libnvJitLink|^libmpi|^libopen-(rte|pal)'
find "$bundle" -type f -perm -u+x -exec sh -c 'head -c 4 "$1" | grep -q ELF && echo "$1"' _ {} \; |
  while read -r binary; do ldd "$binary" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}'; done |
  sort -u | while read -r lib; do
    name=$(basename "$lib")
    [[ $lib == *"/_solib_"* || $name =~ $node_provided ]] && continue
    cp -L "$lib" "$bundle/lib/$name"
  done

tar -C "$stage" -cJf "$out" gpu_selftest  # xz: a third smaller than gzip here
size=$(stat -c %s "$out")
echo "bundle: $out, $((size / 1048576)) MiB ($(find "$bundle" -type f | wc -l) files)"
if ((size > limit_mib * 1048576)); then
  echo "make_bundle.sh: the bundle is larger than $limit_mib MiB" >&2
  exit 1
fi
