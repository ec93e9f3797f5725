#!/usr/bin/env bash
# Builds the GPU self-test's binaries and packs them, with the shared libraries they need that
# are neither the CUDA/driver libraries (the GPU node's own) nor the C library's, into one
# archive for a GPU node without Bazel or network:
#   tools/gpu_selftest/make_bundle.sh [--with-mpi] [OUT.tar.xz] [CUDA_ARCHS]
#     --with-mpi  carry the build's Open MPI too (its libraries, plugins, help texts and mpirun),
#                 for a node that has none or another one; run_selftest.sh relocates it
#     OUT         the archive (default: gpu_selftest_bundle.tar.xz)
#     CUDA_ARCHS  the GPUs' compute capabilities (default 70,80,90: native code for V100, A100
#                 and H100/H200, PTX of the last for newer GPUs: no JIT compile at any rank's
#                 start; less what this nvcc cannot compile, said: CUDA 13 has no sm_70;
#                 "build": the build's own, whose objects are already compiled)
# On the node: tar xJf OUT && gpu_selftest/run_selftest.sh (MPI from the node, unless carried:
# module load openmpi).
set -euo pipefail
cd "$(dirname "$0")/../.."
with_mpi=false
if [[ ${1:-} == --with-mpi ]]; then
  with_mpi=true
  shift
fi
out=$(realpath -m "${1:-gpu_selftest_bundle.tar.xz}")
# The course's GPUs that this nvcc compiles for, each one it cannot named.
default_archs() {
  local compilable picked=() arch
  compilable=" $(nvcc --list-gpu-arch | sed 's/^compute_//' | tr '\n' ' ') "
  for arch in 70 80 90; do
    if [[ $compilable == *" $arch "* ]]; then
      picked+=("$arch")
    else
      echo "make_bundle.sh: $(nvcc --version | grep -o 'release [0-9.]*') cannot compile for" \
        "sm_$arch: the bundle has no code for it (V100s need a CUDA 12 build)" >&2
    fi
  done
  (IFS=,; echo "${picked[*]}")
}
archs=${2:-$(default_archs)}
limit_mib=55  # with the tracked tree (about 5 MiB), under a node's 60

build=(bazel build //tools/gpu_selftest)
[[ $archs != build ]] && build+=(--repo_env=COURSE_CUDA_ARCHS="$archs")
"${build[@]}" >&2

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
bundle=$stage/gpu_selftest
mkdir -p "$bundle/lib"
# The runfiles tree: every binary at its workspace path, the tests' shared objects beside them.
cp -rL bazel-bin/tools/gpu_selftest/gpu_selftest.runfiles/course/. "$bundle/"
cp tools/gpu_selftest/run_selftest.sh tools/gpu_selftest/host_waits_on_gpu.sh "$bundle/"
# Day 4's text, which a node without Debian's fortunes lacks: one file of it is enough here.
mkdir "$bundle/text"
cp /usr/share/games/fortunes/computers "$bundle/text/"
# Day 4's image models' data, which a node without Debian's dataset-fashion-mnist lacks too: the
# first 1,024 training and 256 test images of Fashion-MNIST, as IDX files with the count patched.
idx_head() {  # idx_head NAME COUNT
  local name=$1 count=$2 header=8 item=1 out=$bundle/fashion-mnist/$1
  local source=/usr/share/datasets/fashion-mnist/$1.gz
  [[ $name == *images* ]] && header=16 item=784
  head -c $((header + count * item)) < <(zcat "$source" 2>/dev/null) >"$out"
  if (($(stat -c %s "$out") != header + count * item)); then
    echo "make_bundle.sh: could not read $count items of $source" \
      "(./setup.sh installs dataset-fashion-mnist)" >&2
    exit 1
  fi
  printf "$(printf '\\x%02x' $((count >> 24 & 255)) $((count >> 16 & 255)) $((count >> 8 & 255)) \
    $((count & 255)))" | dd of="$out" bs=1 seek=4 conv=notrunc status=none
}
mkdir "$bundle/fashion-mnist"
for split in train:1024 t10k:256; do
  idx_head "${split%:*}-images-idx3-ubyte" "${split#*:}"
  idx_head "${split%:*}-labels-idx1-ubyte" "${split#*:}"
done

# Open MPI relocated under mpi/ (run_selftest.sh points OPAL_PREFIX there): its programs, its
# plugins (Open MPI's and PMIx's, loaded at MPI_Init) and its help texts. It serves one node;
# across nodes, the node's own MPI knows the fabric.
node_mpi='|^libmpi|^libopen-(rte|pal)'
if $with_mpi; then
  node_mpi=''
  prefix=$(ompi_info --path prefix --parsable | cut -d: -f3)
  pkglibdir=$(ompi_info --path pkglibdir --parsable | cut -d: -f3)
  pkgdatadir=$(ompi_info --path pkgdatadir --parsable | cut -d: -f3)
  mpi=$bundle/mpi
  mkdir -p "$mpi/bin" "$mpi/${pkglibdir#"$prefix"/}" "$mpi/${pkgdatadir#"$prefix"/}" "$mpi/pmix"
  for program in mpirun orterun orted; do cp -L "$(command -v "$program")" "$mpi/bin/"; done
  # One node's transports (shared memory, TCP): no fabrics' plugins, no MPI-IO, no OpenSHMEM.
  for plugin in "$pkglibdir"/*.so; do
    [[ $(basename "$plugin") =~ ofi|psm|ucx|uct|openib|verbs|_io_|fs_|fbtl|fcoll|sharedfp|spml|sshmem|scoll|memheap|_atomic_ ]] ||
      cp -L "$plugin" "$mpi/${pkglibdir#"$prefix"/}/"
  done
  cp -rL "$pkgdatadir"/. "$mpi/${pkgdatadir#"$prefix"/}/"
  pmix_library=$(realpath "$(ldconfig -p | awk '/libpmix\.so\.2 /{print $NF; exit}')")
  cp -L "$(dirname "$pmix_library")"/pmix/*.so "$mpi/pmix/"
fi

# OpenCV's GDAL decoder (cv::IMREAD_LOAD_GDAL: geospatial rasters, which the course never reads)
# would bring libgdal and its own libraries, over 100 MiB (ICU's data, x265, PROJ, HDF5, ...).
# The bundle carries instead a libgdal of the few functions OpenCV binds at load time: the driver
# registration OpenCV calls when its codecs start registers none, and any other stops the program
# with that reason; every format the course reads is OpenCV's own.
stubs=$stage/stubs
mkdir "$stubs"
imgcodecs=$(ldconfig -p | awk '/libopencv_imgcodecs\.so\.[0-9]+ / && !n++ {print $NF}')
gdal=$(ldd "$imgcodecs" 2>/dev/null | awk '/libgdal\.so/ && !n++ {print $3}')
if [[ -n $gdal ]]; then
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo 'static void absent(void) { fputs("GDAL is not in this bundle: cv::IMREAD_LOAD_GDAL" \'
    echo '  " is not supported here\n", stderr); abort(); }'
    comm -12 <(nm -D --undefined-only "$imgcodecs" | awk '{print $2}' | sort -u) \
      <(nm -D --defined-only "$gdal" | awk '$2 ~ /^[TW]$/ {print $3}' | sort -u) |
      awk '{printf "void f%d(void) __asm__(\"%s\");\nvoid f%d(void) { %s }\n", NR, $1, NR,
                  $1 == "GDALAllRegister" ? "" : "absent();"}'
  } >"$stubs/gdal.c"
  gcc -shared -fPIC -O2 -o "$stubs/$(basename "$gdal")" -Wl,-soname,"$(basename "$gdal")" \
    "$stubs/gdal.c"
  rm "$stubs/gdal.c"
fi

# System libraries the binaries and plugins load, less those the node must provide itself (the
# GDAL stand-in found first, so that its real library's own are not carried).
node_provided="^lib(c|m|dl|rt|pthread|resolv|util)\\.so|^ld-linux|^libcuda\\.|^libcudart|^libcublas|^libcudnn|^libnccl|^libnvrtc|^libnvidia|^libnvJitLink$node_mpi"
find "$bundle" -type f \( -perm -u+x -o -name '*.so' \) -exec sh -c 'head -c 4 "$1" | grep -q ELF && echo "$1"' _ {} \; |
  while read -r binary; do
    LD_LIBRARY_PATH=$stubs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$binary" 2>/dev/null |
      awk '$2 == "=>" && $3 ~ /^\// {print $3}'
  done |
  sort -u | while read -r lib; do
    name=$(basename "$lib")
    [[ $lib == *"/_solib_"* || $name =~ $node_provided ]] && continue
    cp -L "$lib" "$bundle/lib/$name"
  done
rm -rf "$stubs"

# xz with its x86 filter, which makes machine code compress better (7% smaller than plain xz
# here), at preset 6: its 24 MiB blocks keep two threads busy (about 260 MiB packed into 57 MiB
# in 105 s on two cores; preset 9's two 192 MiB blocks, 55 MiB in 210 s).
tar -C "$stage" -cf - gpu_selftest | xz --x86 --lzma2=preset=6 -T2 >"$out"
size=$(stat -c %s "$out")
echo "bundle: $out, $((size / 1048576)) MiB ($(find "$bundle" -type f | wc -l) files)"
if ((size > limit_mib * 1048576)); then
  echo "make_bundle.sh: the bundle is larger than $limit_mib MiB" >&2
  exit 1
fi
