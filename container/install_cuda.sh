#!/usr/bin/env bash
# The CUDA toolkit of the course's CUDA image, from NVIDIA's redistributable wheels on PyPI (the
# versions the course is built and tested with, pinned; no NVIDIA package repository needed):
# nvcc with its front ends and NVVM, the runtime, cuBLAS, cuDNN, NCCL, NVRTC and nvJitLink (cuDNN's
# runtime-compiled engines), NVTX. Laid out as a toolkit (bin, include, lib and lib64, nvvm) with
# the libraries' unversioned names for the linker, on the loader's path, as /usr/local/cuda. The
# driver (libcuda.so.1) is the host's, brought in at run time (podman's CDI devices, or
# apptainer exec --nv). As root:  container/install_cuda.sh [PREFIX]  (default /usr/local/cuda-13.0)
set -euo pipefail
prefix=${1:-/usr/local/cuda-13.0}
wheels=(
  nvidia-cuda-runtime==13.0.96 nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88
  nvidia-cuda-cccl==13.0.85 nvidia-nvvm==13.0.88 nvidia-cuda-nvrtc==13.0.88
  nvidia-nvjitlink==13.0.88 nvidia-nvtx==13.0.85 nvidia-cublas==13.1.0.3
  nvidia-cudnn-cu13==9.19.0.56 nvidia-nccl-cu13==2.28.9
)
[[ $(id -u) -eq 0 ]] || { echo "install_cuda: run as root" >&2; exit 1; }
if ! python3 -m pip --version >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    python3-pip ca-certificates >/dev/null
fi
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$download" "${wheels[@]}"
for wheel in "$download"/*.whl; do python3 -m zipfile -e "$wheel" "$download/unpacked"; done
# Each wheel holds nvidia/<part>/{bin,include,lib,nvvm}: the parts merge into one tree.
mkdir -p "$prefix"
for part in "$download"/unpacked/nvidia/*/; do cp -a "$part". "$prefix/"; done
rm -rf "$prefix/.metadata"
# zip archives keep no permission bits: the toolkit's programs made executable again.
find "$prefix/bin" "$prefix/nvvm/bin" -type f -exec chmod 755 {} +
(
  cd "$prefix/lib"
  for lib in lib*.so.*; do
    [[ -e ${lib%%.so.*}.so ]] || ln -s "$lib" "${lib%%.so.*}.so"
  done
)
ln -sfn lib "$prefix/lib64"
ln -sfn "$prefix" /usr/local/cuda
echo "$prefix/lib" >/etc/ld.so.conf.d/course-cuda.conf
ldconfig
echo "install_cuda: ${wheels[*]} in $prefix ($(du -sh "$prefix" | cut -f1))"
