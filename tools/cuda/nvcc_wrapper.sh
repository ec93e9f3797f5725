#!/usr/bin/env bash
# Runs nvcc for one .cu file and says so on stderr, so every build log (CI's included) names
# each CUDA source it compiled and for which architectures.
#   nvcc_wrapper.sh <nvcc> <source> <object> <nvcc flags...>
set -euo pipefail
nvcc=$1 source=$2 object=$3
shift 3
"$nvcc" "$@" -c "$source" -o "$object"
archs=$(printf '%s\n' "$@" | sed -n 's/^-gencode=arch=compute_[0-9]*,code=sm_\([0-9]*\)$/sm_\1/p' | paste -sd, -)
echo "nvcc $("$nvcc" --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p'): compiled $source for $archs" >&2
