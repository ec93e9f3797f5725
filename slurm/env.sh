# Sourced by every sbatch script of the course: the one place for the job's environment.
#   - the repository: the folder sbatch was called from (the labs are built there beforehand
#     with `bazel build //day2_ddp:lab ...`, on a login node: compute nodes need no Bazel);
#   - OpenMP threads per rank: the CPUs Slurm gave each task;
#   - a site's modules (CUDA, NCCL, OpenMPI) go in slurm/site.sh, which is not versioned.
set -euo pipefail
repo=${SLURM_SUBMIT_DIR:-$(pwd)}
cd "$repo"
[[ -f slurm/site.sh ]] && source slurm/site.sh
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}

# lab_binary TARGET: the built binary of a lab target ("//day2_ddp:lab"), or a clear error.
lab_binary() {
  local target=$1 path
  path="bazel-bin/$(sed -e 's|^//||' -e 's|:|/|' <<<"$target")"
  if [[ ! -x $path ]]; then
    echo "error: $path is not built: run 'bazel build $target' in $repo first" >&2
    exit 1
  fi
  echo "$path"
}

echo "job ${SLURM_JOB_ID:-?} on $(hostname): ${SLURM_NTASKS:-1} task(s), $OMP_NUM_THREADS CPU(s) each"
