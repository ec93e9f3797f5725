#!/usr/bin/env bash
# Writes an sbatch script for a lab and submits it, printing the job id (in the spirit of the
# course's gpu_jobs_submitter); also shows the user's queue and finds a job's logs.
#
#   slurm/submit.sh [options] LAB [-- LAB FLAGS...]
#   slurm/submit.sh --queue                 the user's jobs, by name
#   slurm/submit.sh --logs JOBID            the output and error files of a job
#
# LAB: day1_gpu, day2_ddp, day3_data, day4_large_models (the trainee's labs) or the same under
# solutions/.
# Options:
#   --nodes N         nodes (default 1): N x --gpus ranks, srun across the nodes, each rank's
#                     GPU from its local rank
#   --gpus N          GPUs on each node, one rank each (default 1)
#   --cpu             CPU ranks: N ranks without requesting GPUs (test clusters, laptops)
#   --cpus-per-rank N CPUs of each rank (default 1; day 3: its --num-workers loader workers
#                     plus the rank's own thread, 8 when the lab fits the workers to the rank)
#   --time T          time limit: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (00:30:00)
#   --account A, --partition P, --constraint C
#   --begin T         start no earlier than T (18:00, now+1hour, 2026-11-23T18:00)
#   --name NAME       job name (default: the lab's)
#   --sbatch OPTION   one more #SBATCH line, e.g. --sbatch --mail-type=END (repeatable)
#   --container IMAGE run the lab inside IMAGE (container/: an Apptainer .sif, with
#                     --container-runtime pyxis an image srun's --container-image takes, with
#                     podman an image of the nodes' Podman storage)
#   --container-runtime apptainer|pyxis|podman   how the ranks enter the container (apptainer)
#   --dry-run         print the script, submit nothing
# The script is kept in slurm/jobs/. Lab flags are written quoted: none reaches a shell as code.
# Day 4's grid (--tensor-parallel x --context-parallel x --pipeline-stages) must divide the
# job's ranks: the rest form its data-parallel replicas, and no rank is asked for and left idle.
set -euo pipefail
cd "$(dirname "$0")/.."

labs=(day1_gpu day2_ddp day3_data day4_large_models
  solutions/day1_gpu solutions/day2_ddp solutions/day3_data solutions/day4_large_models)
fail() {
  echo "submit: $*" >&2
  exit 1
}
source slurm/job_script.sh

nodes=1 gpus=1 cpu=0 cpus="" time=00:30:00 account="" partition="" constraint="" begin="" name=""
extra=() dry=0 lab="" lab_flags=() container="" runtime=apptainer
while (($#)); do
  case $1 in
    --queue)
      exec squeue -u "$(id -un)" -o '%.10i %.24j %.9T %.10M %.10l %.6D %R' --sort=j ;;
    --logs)
      (($# >= 2)) || fail "--logs needs a job id"
      check "$2" '[0-9]+(_[0-9]+)?' "job id"
      info=$(scontrol show job "$2" 2>/dev/null | tr ' ' '\n')
      if grep -q '^StdOut=' <<<"$info"; then  # the output file first, then the error file
        sed -n 's/^StdOut=//p' <<<"$info"
        sed -n 's/^StdErr=//p' <<<"$info"
      else  # a job Slurm has forgotten: its files by the scripts' naming, %x_%j.out/.err
        ls -1 ./*_"$2".out ./*_"$2".err 2>/dev/null || fail "no logs found for job $2"
      fi
      exit 0 ;;
    --nodes) nodes=${2-}; shift 2 ;;
    --gpus) gpus=${2-}; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --cpus-per-rank) cpus=${2-}; shift 2 ;;
    --time) time=${2-}; shift 2 ;;
    --account) account=${2-}; shift 2 ;;
    --partition) partition=${2-}; shift 2 ;;
    --constraint) constraint=${2-}; shift 2 ;;
    --begin) begin=${2-}; shift 2 ;;
    --name) name=${2-}; shift 2 ;;
    --sbatch) extra+=("${2-}"); shift 2 ;;
    --container) container=${2-}; shift 2 ;;
    --container-runtime) runtime=${2-}; shift 2 ;;
    --dry-run) dry=1; shift ;;
    --) shift; lab_flags=("$@"); break ;;
    -*) fail "unknown option '$1'" ;;
    *) [[ -z $lab ]] || fail "one lab at a time (got '$lab' and '$1')"; lab=$1; shift ;;
  esac
done

[[ -n $lab ]] || fail "which lab? (one of: ${labs[*]})"
# grep without -q reads all its input: no SIGPIPE for printf under pipefail.
printf '%s\n' "${labs[@]}" | grep -xF -- "$lab" >/dev/null || fail "unknown lab '$lab' (one of: ${labs[*]})"
# lab_flag NAME: the value the lab flags give --NAME last (`--NAME V` or `--NAME=V`), or nothing.
lab_flag() {
  local i value=""
  for ((i = 0; i < ${#lab_flags[@]}; i++)); do
    case ${lab_flags[i]} in
      "--$1") value=${lab_flags[i + 1]-} ;;
      "--$1="*) value=${lab_flags[i]#*=} ;;
    esac
  done
  echo "$value"
}

# Day 3's loader workers each get a CPU beside the rank's own thread; a lab that fits its
# workers to the rank (no --num-workers, or -1) gets 8.
day3_cpus() {
  local workers
  workers=$(lab_flag num-workers)
  if [[ -z $workers || $workers == -1 ]]; then
    cpus=${cpus:-8}
    return
  fi
  check "$workers" '[0-9]+' "the lab's --num-workers (0 or more)"
  if [[ -z $cpus ]]; then
    cpus=$((workers + 1))
  elif [[ $cpus =~ ^[0-9]+$ ]] && ((cpus < workers + 1)); then
    fail "day 3's $workers loader worker(s) and each rank's own thread need --cpus-per-rank" \
      "$((workers + 1)) or more (got $cpus)"
  fi
}

# Day 4's grid: the job's ranks a multiple of tensor-parallel x context-parallel x stages, the
# rest its data-parallel replicas; a job that asks for ranks the grid cannot use is refused.
check_day4_grid() {
  local tp cp pp ranks=$((nodes * gpus))
  tp=$(lab_flag tensor-parallel) cp=$(lab_flag context-parallel) pp=$(lab_flag pipeline-stages)
  check "${tp:=1}" '[1-9][0-9]*' "the lab's --tensor-parallel (a positive number)"
  check "${cp:=1}" '[1-9][0-9]*' "the lab's --context-parallel (a positive number)"
  check "${pp:=1}" '[1-9][0-9]*' "the lab's --pipeline-stages (a positive number)"
  ((ranks % (tp * cp * pp) == 0)) ||
    fail "--nodes $nodes x --gpus $gpus = $ranks rank(s) is no multiple of the grid's" \
      "$((tp * cp * pp)) (--tensor-parallel $tp x --context-parallel $cp x --pipeline-stages" \
      "$pp): ask for a multiple of $((tp * cp * pp)) ranks"
}

[[ $lab == *day3_data ]] && day3_cpus
cpus=${cpus:-1}
check_job_options
if [[ $lab == *day1_gpu ]] && ((nodes > 1 || gpus > 1)); then
  fail "day 1's lab runs one process: no --nodes or --gpus above 1 (day2_ddp runs several)"
fi
[[ $lab == *day4_large_models ]] && check_day4_grid
name=${name:-${lab//\//_}}
check "$name" '[A-Za-z0-9_.-]+' "--name (letters, digits, _ . -)"
[[ -z $constraint ]] || check "$constraint" '[A-Za-z0-9_.,&|*:()-]+' "--constraint"
[[ -z $container ]] || check "$container" '[A-Za-z0-9_./:@+-]+' "--container (a path or an image name)"
check "$runtime" 'apptainer|pyxis|podman' "--container-runtime (apptainer, pyxis or podman)"
# An image file must be there before the job waits in the queue for it (pyxis also takes names;
# Podman's images are in its storage; a dry run only prints the script).
if ((!dry)) && [[ -n $container && ($runtime == apptainer || $container == *.sqsh) ]] &&
  [[ ! -f $container ]]; then
  fail "--container $container: no such image file here (README.md, \"Running on a Slurm" \
    "cluster\", builds one from container/course.def)"
fi
if ((!dry)) && [[ -n $container && $runtime == podman ]] &&
  ! { command -v podman >/dev/null && podman image exists "$container"; }; then
  fail "--container $container: no such image in Podman's storage (README.md builds one from" \
    "container/Containerfile)"
fi
for option in "${extra[@]}"; do
  check "$option" '--[a-z][a-z-]*(=[^[:space:]"'"'"'`$;\\]*)?' "--sbatch option (one --name=value, no spaces or quotes)"
done

script="slurm/jobs/${name}_$(date +%Y%m%d_%H%M%S).sbatch"
body() {
  echo "#!/usr/bin/env bash"
  echo "# Written by slurm/submit.sh on $(date -Iseconds) for $lab."
  sbatch_header "$name" "%x_%j"
  [[ -z $constraint ]] || echo "#SBATCH --constraint=$constraint"
  local option
  for option in "${extra[@]}"; do echo "#SBATCH $option"; done
  if [[ -n $container ]]; then
    echo "export COURSE_CONTAINER=$container COURSE_CONTAINER_RUNTIME=$runtime"
  fi
  echo "source slurm/env.sh"
  printf 'run_lab //%s:lab' "$lab"
  ((${#lab_flags[@]} == 0)) || printf ' %q' "${lab_flags[@]}"
  printf '\n'
}

if ((dry)); then
  body
  exit 0
fi
command -v sbatch >/dev/null || fail "sbatch not found: is this a Slurm login node?"
mkdir -p slurm/jobs
body >"$script"
job=$(sbatch --parsable "$script") || fail "sbatch refused $script"
echo "submitted job ${job%%;*} ($script)"
