# Sourced by slurm/submit.sh and slurm/race.sh: the checks of a job's options and the #SBATCH
# lines every job script they write starts with. The caller defines fail MESSAGE and sets
# nodes, gpus, cpu (1: no GPU request), cpus, time, begin, account, partition.

# check VALUE PATTERN WHAT: the whole value must match the extended regex.
check() {
  [[ $1 =~ ^($2)$ ]] || fail "$3 '$1' is not valid"
}

check_job_options() {
  check "$nodes" '[1-9][0-9]*' "--nodes (a positive number)"
  check "$gpus" '[1-9][0-9]*' "--gpus (a positive number)"
  check "$cpus" '[1-9][0-9]*' "--cpus-per-rank (a positive number)"
  check "$time" '[0-9]+|[0-9]+:[0-5][0-9]|[0-9]+:[0-5][0-9]:[0-5][0-9]|[0-9]+-[0-9]+(:[0-5][0-9]){0,2}' \
    "--time (MM, MM:SS, HH:MM:SS or D-HH[:MM[:SS]])"
  [[ -z $begin ]] || check "$begin" '[A-Za-z0-9:+.-]+' "--begin"
  [[ -z $account ]] || check "$account" '[A-Za-z0-9_.-]+' "--account (letters, digits, _ . -)"
  [[ -z $partition ]] || check "$partition" '[A-Za-z0-9_.,-]+' "--partition"
}

# sbatch_header NAME LOG: the job's #SBATCH lines, one rank per GPU, its CPUs whole cores (two
# hyper-threads of one core share its units: a rank's OpenMP threads and loader workers run slower
# on them), output to LOG.out and LOG.err; Slurm's USR1 two minutes before the limit, then a
# requeue (slurm/env.sh: run_lab).
sbatch_header() {
  echo "#SBATCH --job-name=$1"
  echo "#SBATCH --nodes=$nodes"
  echo "#SBATCH --ntasks-per-node=$gpus"
  echo "#SBATCH --cpus-per-task=$cpus"
  echo "#SBATCH --hint=nomultithread"
  ((cpu)) || echo "#SBATCH --gpus-per-node=$gpus"
  echo "#SBATCH --time=$time"
  echo "#SBATCH --signal=USR1@120"
  echo "#SBATCH --requeue"
  echo "#SBATCH --open-mode=append"
  echo "#SBATCH --output=$2.out"
  echo "#SBATCH --error=$2.err"
  [[ -z $account ]] || echo "#SBATCH --account=$account"
  [[ -z $partition ]] || echo "#SBATCH --partition=$partition"
  [[ -z $begin ]] || echo "#SBATCH --begin=$begin"
  return 0
}
