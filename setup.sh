#!/usr/bin/env bash
# One-shot machine setup: installs every Debian package the course needs to build, test and
# run its labs (idempotent; it returns quickly when everything is already present).
set -euo pipefail

packages=(
  bazel-bootstrap           # the build system, used offline
  g++ clang-format          # compiler and formatter
  libopenmpi-dev openmpi-bin  # the MPI engine of the communicator (CPU ranks)
  libdnnl-dev               # oneDNN: GEMM, convolutions, pooling, batch norm on the CPU
  libopencv-dev             # image decoding and CPU transforms
  libgtest-dev libgmock-dev # tests
  libbenchmark-dev          # micro-benchmarks
  libcli11-dev              # command-line flags
  nlohmann-json3-dev        # metrics, traces, configuration
  gnuplot-nox               # plots of the batch-size sweep
  zlib1g-dev                # gzip-compressed IDX datasets
  libarchive-dev            # WebDataset tar shards (day 3)
  libsqlite3-dev            # hyper-parameter studies shared by many workers (day 3)
  libpq-dev postgresql      # the same studies on a PostgreSQL server, for workers on many nodes
  dataset-fashion-mnist     # the embedded default dataset
  fortunes                  # the embedded default text corpus (transformer labs)
  chromium                  # renders the race's leaderboard and the grader's scorecard in tests
  git zip unzip             # the class grader's hand-ins: git branches and zip archives
  bubblewrap                # the class grader's sandbox around each trainee's checks
  python3-pip python3-venv  # the pinned nvJPEG and cuDNN-frontend wheels, Optuna (below)
  slurmctld slurmd slurm-client munge  # a local Slurm cluster for the sbatch scripts' tests
  podman runc debootstrap   # the course's container image built and run (container/image_test.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
else
  echo "setup: all packages present"
fi

# nvJPEG (day 3's decoding on the GPU), where the CUDA toolkit is but lacks it: NVIDIA's
# redistributable wheel from PyPI, pinned to the toolkit's major version, unpacked (not
# installed into any Python) where tools/cuda/cuda_configure.bzl finds it. Without a registry it
# is left out, said once: the build then refuses --decode-device gpu with that reason.
nvjpeg_version=13.0.2.28
nvjpeg_home=${COURSE_NVJPEG_HOME:-$HOME/.cache/course/nvjpeg-$nvjpeg_version}
cuda_home=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc 2>/dev/null || echo /nonexistent/bin/nvcc)")")")
if [[ -x $cuda_home/bin/nvcc && ! -e $cuda_home/include/nvjpeg.h && ! -e $nvjpeg_home/include/nvjpeg.h ]]; then
  wheels=$(mktemp -d)
  if python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" \
    "nvidia-nvjpeg==$nvjpeg_version" 2>"$wheels/log"; then
    mkdir -p "$nvjpeg_home"
    python3 -m zipfile -e "$wheels"/nvidia_nvjpeg-*.whl "$wheels/unpacked"
    cp -r "$wheels"/unpacked/nvidia/cu*/include "$wheels"/unpacked/nvidia/cu*/lib "$nvjpeg_home/"
    echo "setup: nvJPEG $nvjpeg_version in $nvjpeg_home"
  else
    echo "setup: nvJPEG not installed (pip download failed: $(tail -1 "$wheels/log"));" \
      "--decode-device gpu will be refused" >&2
  fi
  rm -rf "$wheels"
fi

# The cuDNN frontend's C++ headers (cuDNN's graph API: flash attention on the GPU), header-only,
# from NVIDIA's wheel on PyPI, pinned, unpacked beside nvJPEG; without a registry attention on
# the GPU keeps the course's kernels, said once when it runs.
cudnn_frontend_version=1.32.0
cudnn_frontend_home=${COURSE_CUDNN_FRONTEND_HOME:-$HOME/.cache/course/cudnn-frontend-$cudnn_frontend_version}
if [[ -x $cuda_home/bin/nvcc && ! -e $cudnn_frontend_home/include/cudnn_frontend.h ]]; then
  wheels=$(mktemp -d)
  if python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$wheels" \
    "nvidia-cudnn-frontend==$cudnn_frontend_version" 2>"$wheels/log"; then
    mkdir -p "$cudnn_frontend_home"
    python3 -m zipfile -e "$wheels"/nvidia_cudnn_frontend-*.whl "$wheels/unpacked"
    cp -r "$wheels"/unpacked/include "$cudnn_frontend_home/"
    echo "setup: the cuDNN frontend $cudnn_frontend_version in $cudnn_frontend_home"
  else
    echo "setup: the cuDNN frontend not installed (pip download failed: $(tail -1 "$wheels/log"));" \
      "attention on the GPU will run the course's kernels" >&2
  fi
  rm -rf "$wheels"
fi

# Optuna in a virtual environment of the project's own (pinned; tools/optuna/optuna_configure.bzl
# finds it): the tests open the HPO tool's exports with Optuna itself. Without a registry those
# tests fail, naming this step.
optuna_version=5.0.0
optuna_home=${COURSE_OPTUNA_HOME:-$HOME/.cache/course/optuna-$optuna_version}
if ! "$optuna_home/bin/python3" -c "import optuna" 2>/dev/null; then
  if python3 -m venv "$optuna_home" &&
    "$optuna_home/bin/python3" -m pip install --quiet "optuna==$optuna_version" 2>"$optuna_home.log"; then
    echo "setup: Optuna $optuna_version in $optuna_home"
  else
    echo "setup: Optuna not installed ($(tail -1 "$optuna_home.log" 2>/dev/null)): the HPO" \
      "export test will fail" >&2
  fi
fi
