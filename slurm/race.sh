#!/usr/bin/env bash
# The day-3 race (day3_data/README.md): trainees enter recipes, every entry runs as a Slurm job
# at night within the race's budget, and the leaderboard is read the next morning.
#
#   slurm/race.sh enter NAME -- RECIPE FLAGS   checks the recipe with a --test run of the race
#                                               lab (the epochs must fit the budget), then keeps it
#   slurm/race.sh list                          the entries, their flags and their runs' progress
#   slurm/race.sh launch [options]              every entry as a job (the last runs set aside)
#   slurm/race.sh board [--title T]             the leaderboard: board.md, board.csv, PNGs, HTML
#
# launch options:
#   --begin T       start no earlier than T (18:00, now+1hour, 2026-11-23T18:00)
#   --nodes N       nodes of each entry (default 1)
#   --gpus N        GPUs of each entry's nodes, one rank each (default 1); --cpu: CPU tasks, no
#                   GPU request
#   --cpus-per-rank N  CPUs of each rank (default 2)
#   --time T        each job's time limit (default 01:00:00, the course's)
#   --account A, --partition P
#   --dry-run       print the job scripts, submit nothing
#   --scrontab      print the scrontab line that launches the race every night at 18:00
# Environment: RACE_DIR (default race/, or $COURSE_WORK/course/race with a site's work space,
# slurm/spaces.sh) holds entries/, runs/ (<name>.jsonl metrics), logs/,
# tensorboard/, board/ and archive/; RACE_LAB the race lab's target (default //day3_data:race;
# //solutions/day3_data:race with the solutions); RACE_FLAGS budget flags shared by every
# entry (--budget-s, --race-gpus, --validation-s); RACE_TEST_PREFIX what runs the --test check
# (e.g. "srun --ntasks=1 --gpus=1" to time it on a GPU node).
set -euo pipefail
cd "$(dirname "$0")/.."

[[ -f slurm/site.sh ]] && source slurm/site.sh
source slurm/spaces.sh
check_spaces
race_dir=${RACE_DIR:-$(race_home)}
race_lab=${RACE_LAB:-//day3_data:race}
read -r -a race_flags <<<"${RACE_FLAGS:-}"
read -r -a test_prefix <<<"${RACE_TEST_PREFIX:-}"

fail() {
  echo "race: $*" >&2
  exit 1
}
source slurm/job_script.sh
binary() {  # binary TARGET: its built file, or a clear error
  local path
  path="bazel-bin/$(sed -e 's|^//||' -e 's|:|/|' <<<"$1")"
  [[ -x $path ]] || fail "$path is not built: run 'bazel build $1' first"
  echo "$path"
}

enter() {
  (($# >= 1)) || fail "enter NAME -- RECIPE FLAGS"
  local name=$1
  shift
  check "$name" '[A-Za-z0-9_-]{1,40}' "entry name (letters, digits, _ and -, at most 40)"
  [[ ${1-} == -- ]] || fail "enter $name: the recipe's flags go after --"
  shift
  local flag
  for flag in "$@"; do
    case ${flag%%=*} in
      --test | --test-subset | --metrics | --logdir | --chkpt | --resume | --budget-s | \
        --race-gpus | --validation-s | --findlr)
        fail "enter $name: $flag is the race's to set, not a recipe's" ;;
    esac
  done
  local lab
  lab=$(binary "$race_lab")
  echo "checking $name's recipe:" "${test_prefix[@]}" "$lab" --test "${race_flags[@]}" "$@"
  local out
  if ! out=$("${test_prefix[@]}" "$lab" --test --no-progress "${race_flags[@]}" "$@" 2>&1); then
    echo "$out" | tail -3 >&2
    fail "$name's recipe was refused (above); nothing entered"
  fi
  grep "eligible to run" <<<"$out"
  mkdir -p "$race_dir/entries"
  printf '%s\n' "$@" >"$race_dir/entries/$name.flags.tmp"
  mv "$race_dir/entries/$name.flags.tmp" "$race_dir/entries/$name.flags"
  echo "entered $name"
}

entries() {  # the entries' names, one per line
  local file
  for file in "$race_dir"/entries/*.flags; do
    [[ -e $file ]] && basename "$file" .flags
  done
  return 0
}

list() {
  local name flags run
  for name in $(entries); do
    mapfile -t flags <"$race_dir/entries/$name.flags"
    run="not run"
    if [[ -f $race_dir/runs/$name.jsonl ]]; then
      run="$(grep -c '"epoch"' "$race_dir/runs/$name.jsonl") epoch(s) run"
    fi
    printf '%-20s %s  (%s)\n' "$name" "$(printf '%q ' "${flags[@]}")" "$run"
  done
}

launch() {
  local begin="" nodes=1 gpus=1 cpu=0 cpus=2 time=01:00:00 account="" partition="" dry=0 scron=0
  while (($#)); do
    case $1 in
      --begin) begin=${2-}; shift 2 ;;
      --nodes) nodes=${2-}; shift 2 ;;
      --gpus) gpus=${2-}; shift 2 ;;
      --cpu) cpu=1; shift ;;
      --cpus-per-rank) cpus=${2-}; shift 2 ;;
      --time) time=${2-}; shift 2 ;;
      --account) account=${2-}; shift 2 ;;
      --partition) partition=${2-}; shift 2 ;;
      --dry-run) dry=1; shift ;;
      --scrontab) scron=1; shift ;;
      *) fail "launch: unknown option '$1'" ;;
    esac
  done
  check_job_options
  if ((scron)); then
    echo "# scrontab -e: launch the race every evening at 18:00 (the jobs start at once)"
    printf '#SCRON --time=00:05:00\n0 18 * * * %q launch --nodes %q --gpus %q --time %q%s\n' \
      "$(pwd)/slurm/race.sh" "$nodes" "$gpus" "$time" "$( ((cpu)) && echo " --cpu")"
    return 0
  fi
  local names
  names=$(entries)
  [[ -n $names ]] || fail "no entries: slurm/race.sh enter NAME -- FLAGS first"
  local cluster stamp name script job
  cluster=$(scontrol show config 2>/dev/null | sed -n 's/^ClusterName *= *//p' || true)
  cluster=${cluster:-local}
  stamp=$(date +%Y-%m-%d)
  job_script() {  # job_script NAME: the entry's sbatch script
    local flags log="$race_dir/logs/$1@${cluster}_%j_${nodes}nodes_$((nodes * gpus))tasks_$stamp"
    mapfile -t flags <"$race_dir/entries/$1.flags"
    echo "#!/usr/bin/env bash"
    echo "# The race entry $1, written by slurm/race.sh on $(date -Iseconds)."
    sbatch_header "race_$1" "$log"
    echo "source slurm/env.sh"
    printf 'run_lab %q --metrics %q --logdir %q' "$race_lab" "$race_dir/runs/$1.jsonl" \
      "$race_dir/tensorboard/$1"
    ((${#race_flags[@]} == 0)) || printf ' %q' "${race_flags[@]}"
    ((${#flags[@]} == 0)) || printf ' %q' "${flags[@]}"
    printf '\n'
  }
  if ((dry)); then
    for name in $names; do job_script "$name"; done
    return 0
  fi
  binary "$race_lab" >/dev/null
  if [[ -d $race_dir/runs ]]; then  # a new race: the last one's runs set aside
    mkdir -p "$race_dir/archive"
    mv "$race_dir/runs" "$race_dir/archive/runs_$(date +%Y%m%d_%H%M%S)"
  fi
  mkdir -p "$race_dir/runs" "$race_dir/logs" "$race_dir/jobs" "$race_dir/tensorboard"
  for name in $names; do
    script="$race_dir/jobs/$name.sbatch"
    job_script "$name" >"$script"
    job=$(sbatch --parsable "$script") || fail "sbatch refused $script"
    echo "launched $name: job ${job%%;*}"
  done
}

board() {
  local title="Race leaderboard $(date +%Y-%m-%d)"
  while (($#)); do
    case $1 in
      --title) title=${2-}; shift 2 ;;
      *) fail "board: unknown option '$1'" ;;
    esac
  done
  "$(binary //day3_data/race_tools:leaderboard)" --runs "$race_dir/runs" --out "$race_dir/board" \
    --title "$title"
}

command=${1-}
(($#)) && shift
case $command in
  enter) enter "$@" ;;
  list) list ;;
  launch) launch "$@" ;;
  board) board "$@" ;;
  *) fail "usage: slurm/race.sh enter NAME -- FLAGS | list | launch [options] | board" ;;
esac
