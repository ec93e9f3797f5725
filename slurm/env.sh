# Sourced by every sbatch script of the course: the one place for the job's environment.
#   - the repository: the folder sbatch was called from (the labs are built there beforehand
#     with `bazel build //day2_ddp:lab ...`, on a login node: compute nodes need no Bazel);
#   - OpenMP threads per rank: the CPUs Slurm gave each task;
#   - a site's modules (CUDA, NCCL, OpenMPI) and storage spaces (slurm/spaces.sh) go in
#     slurm/site.sh, which is not versioned (slurm/site.example.sh shows one).
set -euo pipefail
repo=${SLURM_SUBMIT_DIR:-$(pwd)}
cd "$repo"
[[ -f slurm/site.sh ]] && source slurm/site.sh
source slurm/spaces.sh
check_spaces
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}

# The exit code of a lab stopped by SIGUSR1/SIGTERM after writing its checkpoint.
readonly LAB_PREEMPTED=4

# A lab in a container (slurm/submit.sh --container): COURSE_CONTAINER is the image, whose
# labs were built in /opt/course (container/); COURSE_CONTAINER_RUNTIME says how the ranks enter
# it: `apptainer exec --nv` (default), pyxis's `srun --container-image`, or `podman run` with the
# node's network, IPC and process namespaces, the job's variables and the GPUs the NVIDIA
# container toolkit's CDI names. The job's folder is bound at its own path, so checkpoints and
# logs land beside the job's as without a container; the site's spaces are bound at theirs, the
# datasets read-only.
in_container=() srun_container=()
if [[ -n ${COURSE_CONTAINER:-} ]]; then
  mounts="$repo:$repo${COURSE_SCRATCH:+,$COURSE_SCRATCH:$COURSE_SCRATCH}"
  mounts+="${COURSE_WORK:+,$COURSE_WORK:$COURSE_WORK}"
  mounts+="${COURSE_DATASETS:+,$COURSE_DATASETS:$COURSE_DATASETS:ro}"
  case ${COURSE_CONTAINER_RUNTIME:-apptainer} in
    apptainer)
      in_container=(apptainer exec --nv --bind "$mounts" --pwd "$repo" "$COURSE_CONTAINER") ;;
    pyxis) srun_container=(--container-image="$COURSE_CONTAINER" --container-mounts="$mounts"
      --container-workdir="$repo") ;;
    podman)
      in_container=(podman run --rm --network host --ipc host --pid host --workdir "$repo")
      IFS=, read -r -a volumes <<<"$mounts"
      for volume in "${volumes[@]}"; do in_container+=(--volume "$volume"); done
      in_container+=(--env 'SLURM_*' --env 'PMIX_*' --env OMP_NUM_THREADS)
      [[ -e /etc/cdi/nvidia.yaml || -e /var/run/cdi/nvidia.yaml ]] &&
        in_container+=(--device nvidia.com/gpu=all)
      in_container+=("$COURSE_CONTAINER")
      ;;
    *) echo "error: COURSE_CONTAINER_RUNTIME must be apptainer, pyxis or podman" >&2; exit 1 ;;
  esac
fi

# lab_binary TARGET: the built binary of a lab target ("//day2_ddp:lab"), or a clear error; in
# a container, the image's.
lab_binary() {
  local target=$1 path
  path="bazel-bin/$(sed -e 's|^//||' -e 's|:|/|' <<<"$target")"
  if [[ -n ${COURSE_CONTAINER:-} ]]; then
    echo "/opt/course/$path"
    return
  fi
  if [[ ! -x $path ]]; then
    echo "error: $path is not built: run 'bazel build $target' in $repo first" >&2
    exit 1
  fi
  echo "$path"
}

# run_lab TARGET [LAB FLAGS...]: one rank per task. The job's checkpoint is
# <checkpoint_dir>/<job name>_<job id>.ckpt (checkpoints/, or the site's scratch): resumed from
# when it exists (a requeued job keeps its id), and written when Slurm signals the job (#SBATCH
# --signal=USR1@N, or SIGTERM at the time limit or on preemption), after which the job is
# requeued.
run_lab() {
  local lab ckpt code
  lab=$(lab_binary "$1")
  shift
  ckpt=$(checkpoint_dir)
  mkdir -p "$ckpt"
  ckpt+="/${SLURM_JOB_NAME:-lab}_${SLURM_JOB_ID:-local}.ckpt"
  local resume=()
  if [[ -f $ckpt ]]; then
    resume=(--resume "$ckpt")
    echo "resuming from $ckpt (restart ${SLURM_RESTART_COUNT:-0})"
  fi
  set +e
  srun --mpi=pmix --kill-on-bad-exit=1 "${srun_container[@]}" "${in_container[@]}" "$lab" \
    --no-progress --chkpt "$ckpt" "${resume[@]}" "$@"
  code=$?
  set -e
  if [[ $code -eq $LAB_PREEMPTED && -n ${SLURM_JOB_ID:-} ]]; then
    echo "preempted: checkpoint $ckpt written, requeueing job $SLURM_JOB_ID"
    scontrol requeue "$SLURM_JOB_ID"
    exit 0
  fi
  return "$code"
}

echo "job ${SLURM_JOB_ID:-?} on $(hostname): ${SLURM_NTASKS:-1} task(s), $OMP_NUM_THREADS CPU(s) each"
announce_spaces
