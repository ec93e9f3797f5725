#!/usr/bin/env bash
# The course's image built by a real container engine and run: Debian 12 bootstrapped from its
# mirror (container/make_rootfs.sh) and imported into Podman as the base image (no registry is
# reached), container/Containerfile built over a clean copy of the committed course with the
# host's Bazel disk cache lent to the build (it reuses what ./test.sh compiled), then the day-1 lab
# on its embedded data, two ranks of day 2 and the quick tests run inside the image, and, where
# Slurm is installed, a one-rank and a two-rank job through slurm/submit.sh --container-runtime
# podman on the local cluster. Prints each stage's time and the image's size; removes its images
# at the end; exits non-zero when a stage fails, 77 (skipped, with the reason) where Podman cannot
# run: not root, no podman, or an engine that starts no container.
#   container/image_test.sh [--cuda-toolkit | --prepare | --prepared]
#     --cuda-toolkit  also the CUDA variant's toolkit (container/install_cuda.sh, NVIDIA's wheels
#                     from PyPI, about 2 GB) in an image over the same base, where nvcc compiles
#                     and links a program against the runtime, cuBLAS, cuDNN and NCCL
#     --prepare       only the base image and the Containerfile's packages stage (./setup.sh),
#                     kept for a later --prepared run: mostly downloads, which ./test.sh starts
#                     first, beside its compiling stages
#     --prepared      the test, over what --prepare left (each part made here if it is missing);
#                     removes it at the end
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
[[ -z $mode || $mode =~ ^--(cuda-toolkit|prepare|prepared)$ ]] ||
  { echo "usage: container/image_test.sh [--cuda-toolkit | --prepare | --prepared]" >&2; exit 2; }
cuda_toolkit=false
[[ $mode == --cuda-toolkit ]] && cuda_toolkit=true
skip() {
  echo "SKIPPED: $*"
  exit 77
}
[[ $(id -u) -eq 0 ]] || skip "needs root (debootstrap, Podman's storage)"
command -v podman >/dev/null || skip "no podman (./setup.sh installs it)"

base=localhost/course-debian:bookworm image=localhost/course:test
packages=localhost/course-packages:test cuda_image=localhost/course-cuda-toolkit:test
work=$(mktemp -d)
if [[ $mode == --prepare ]]; then
  trap 'rm -rf "$work"' EXIT
else
  trap 'podman rmi --force "$image" "$packages" "$cuda_image" "$base" >/dev/null 2>&1
    rm -rf "$work"' EXIT
fi
stage() { # stage NAME COMMAND...: runs it, prints its time
  local start=$SECONDS
  echo "== $1"
  shift
  "$@"
  echo "== done in $((SECONDS - start)) s"
}
size_of() { podman image inspect "$1" --format '{{.Size}}' | numfmt --to=iec-i; }
# A stage that downloads from the Debian mirror gets a second try when the first fails.
twice() { "$@" || { echo "== failed once, trying again"; "$@"; }; }
if [[ $mode == --prepared ]] && podman image exists "$base"; then
  echo "== $base: the one container/image_test.sh --prepare imported"
else
  stage "debootstrap Debian 12 (minbase) and import it as $base" \
    twice bash -c "rm -rf '$work/rootfs' &&
    container/make_rootfs.sh '$work/rootfs' --tar '$work/rootfs.tar' >/dev/null &&
    podman import --quiet '$work/rootfs.tar' $base >/dev/null &&
    rm -rf '$work/rootfs' '$work/rootfs.tar'"
fi

# Podman's defaults (crun, systemd's cgroups, limits raised to a million) fail in some VMs and on
# hybrid cgroup trees: then runc with cgroupfs and the shell's own limits (processes at most the
# kernel's pid_max, which such a VM also refuses above), which these hosts accept.
ulimits=()
if ! podman run --rm "$base" true 2>"$work/first_run"; then
  nofile=$(ulimit -Hn) nproc=$(ulimit -Hu) pid_max=$(cat /proc/sys/kernel/pid_max)
  [[ $nofile == unlimited ]] && nofile=1048576
  [[ $nproc == unlimited ]] || ((nproc > pid_max)) && nproc=$pid_max
  cat >"$work/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
CONF
  export CONTAINERS_CONF=$work/containers.conf
  podman run --rm "$base" true 2>>"$work/first_run" ||
    skip "Podman starts no container here: $(tail -1 "$work/first_run")"
  echo "note: Podman's defaults start no container here ($(head -1 "$work/first_run")):" \
    "runc, cgroupfs and the shell's limits instead"
  # podman build's RUN steps take their limits from the command line, not the configuration.
  ulimits=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")
fi

# Lent to the builds' RUN steps and the runs: this machine's Bazel cache, and its certificate
# authorities in place of the image's (a site whose traffic to PyPI passes a TLS-inspecting proxy trusts that
# proxy's authority there).
cache=$HOME/.cache/course-bazel
mkdir -p "$cache"
lent=(-v "$cache:/root/.cache/course-bazel")
[[ -f /etc/ssl/certs/ca-certificates.crt ]] &&
  lent+=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)

mkdir "$work/context"
git archive HEAD | tar -x -C "$work/context"
if [[ $mode == --prepare ]]; then
  stage "podman build container/Containerfile's packages stage (./setup.sh), kept as $packages" \
    twice podman build --quiet "${ulimits[@]}" "${lent[@]}" --target packages \
    -f "$work/context/container/Containerfile" -t "$packages" "$work/context"
  exit 0
fi
stage "podman build container/Containerfile (over its packages stage: the course, the eight labs built)" \
  twice podman build --quiet "${ulimits[@]}" "${lent[@]}" \
  -f "$work/context/container/Containerfile" -t "$image" "$work/context"
echo "image $image: $(size_of "$image")B"

inside() { podman run --rm "${lent[@]}" "$image" bash -c "$1"; }
stage "the day-1 lab on its embedded data, in the image" \
  inside "bazel-bin/day1_gpu/lab --test --test-nsteps 5 --no-progress"
stage "two ranks of day 2's solutions under the image's Open MPI" \
  inside "mpirun --allow-run-as-root --oversubscribe -np 2 bazel-bin/solutions/day2_ddp/lab \
    --test --test-nsteps 3 --no-progress"
stage "the quick tests, in the image" \
  inside "bazel test --test_output=errors //solutions/day1_gpu:check //common/tensor/... \
    //common/nn/... //tools:info_test"

# slurm/submit.sh --container-runtime podman against the built image on the local cluster (as
# ./test.sh's Slurm tests start it): a job of one rank and one of two, each rank entering the
# image through podman run.
jobs_in_image() {
  source slurm/tests/cluster_helpers.sh
  trap 'rm -f ./ci_image_*_[0-9]*.out ./ci_image_*_[0-9]*.err checkpoints/ci_image_*.ckpt \
    slurm/jobs/ci_image_*.sbatch; slurm/local_cluster.sh stop >/dev/null' EXIT
  local lab ranks output
  for lab in solutions/day1_gpu:1 solutions/day2_ddp:2; do
    ranks=${lab#*:} lab=${lab%:*}
    submit --cpu --gpus "$ranks" --time 10 --name "ci_image_$ranks" --container "$image" \
      --container-runtime podman "$lab" -- --synthetic 256 --batch-size 16 --num-workers 1 \
      --test --test-nsteps 3
    wait_for "$job" COMPLETED 300
    output=$(output_of "$job")
    grep -q "training performance" <<<"$output" ||
      fail "job $job in the image has no report: $(tail -3 <<<"$output")"
    ((ranks == 1)) || grep -q "on $ranks rank(s)" <<<"$output" ||
      fail "job $job ran on one rank, not $ranks"
    echo "ok: job $job ($lab, $ranks rank(s)) ran in $image:" \
      "$(grep -m1 '^training perf' <<<"$output")"
  done
}
if command -v slurmctld >/dev/null; then
  stage "Slurm jobs in the image (slurm/submit.sh --container-runtime podman)" \
    bash -c "$(declare -f jobs_in_image); image=$image; jobs_in_image"
else
  echo "Slurm jobs in the image: skipped (no slurmctld; ./setup.sh installs it)"
fi

if $cuda_toolkit; then
  cat >"$work/Containerfile.cuda" <<'CONTAINERFILE'
ARG BASE
FROM ${BASE}
COPY install_cuda.sh probe.cu /tmp/
RUN /tmp/install_cuda.sh && apt-get update -qq && \
    apt-get install -y -qq --no-install-recommends g++ >/dev/null && \
    /usr/local/cuda/bin/nvcc -o /tmp/probe /tmp/probe.cu -lcublas -lcudnn -lnccl && ldd /tmp/probe
CONTAINERFILE
  cp container/install_cuda.sh "$work/"
  cat >"$work/probe.cu" <<'PROBE'
#include <cstdio>
#include <cublas_v2.h>
#include <cudnn.h>
#include <nccl.h>
__global__ void nothing() {}
int main() {
  int nccl = 0;
  ncclGetVersion(&nccl);
  std::printf("cuDNN %zu, NCCL %d, cuBLAS %d\n", cudnnGetVersion(), nccl, CUBLAS_VER_MAJOR);
  nothing<<<1, 1>>>();
}
PROBE
  stage "the CUDA variant's toolkit (wheels from PyPI) compiles and links against cuDNN and NCCL" \
    podman build --quiet "${ulimits[@]}" "${lent[@]}" --build-arg BASE="$base" \
    -f "$work/Containerfile.cuda" -t "$cuda_image" "$work"
  podman run --rm "$cuda_image" /tmp/probe
  echo "image $cuda_image: $(size_of "$cuda_image")B"
fi
