#!/usr/bin/env bash
# Runs nvcc for one .cu file (a group of the library's .cu files, each included by it) and says
# so on stderr, so every build log (CI's included) names each CUDA source it compiled and for
# which architectures.
#   nvcc_wrapper.sh <nvcc> <source> <object> <nvcc flags...>
set -euo pipefail
nvcc=$1 source=$2 object=$3
shift 3
"$nvcc" "$@" -c "$source" -o "$object"
archs=$(printf '%s\n' "$@" | sed -n 's/^-gencode=arch=compute_[0-9]*,code=sm_\([0-9]*\)$/sm_\1/p' | paste -sd, -)
version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
sed -n 's/^#include "\(.*\)"$/\1/p' "$source" | while read -r included; do
  echo "nvcc $version: compiled $included for $archs" >&2
done
