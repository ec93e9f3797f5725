# Sourced by slurm/env.sh and slurm/race.sh: a site's storage spaces, named in slurm/site.sh
# (slurm/site.example.sh shows them). A supercomputer gives each project several spaces, each
# with its own quota, speed and purge policy; the jobs put each output where it belongs:
#   COURSE_SCRATCH   fast, large, purged after weeks: checkpoints and shards (rewritten often,
#                    remade by rerunning a job) in $COURSE_SCRATCH/course/checkpoints
#   COURSE_WORK      kept, backed up or not, smaller: what must outlive a purge, the race's
#                    entries, logs and leaderboard ($COURSE_WORK/course/race) and the studies
#   COURSE_DATASETS  the centre's shared datasets, read-only (DSDIR on some centres): read in
#                    place or copied to the node per job, never written
# Unset, a space is the repository's folder, as on a laptop. A space that is set must exist and
# be writable (readable for COURSE_DATASETS): anything else stops the job before it runs.

# check_space VARIABLE MODE: the named space exists and is writable (MODE w) or readable (r).
check_space() {
  local name=$1 dir=${!1:-}
  [[ -n $dir ]] || return 0
  [[ -d $dir ]] || space_error "$name=$dir is no directory (set it in slurm/site.sh)"
  if [[ $2 == w ]]; then
    [[ -w $dir && -x $dir ]] || space_error "$name=$dir is not writable by $(id -un)"
  else
    [[ -r $dir && -x $dir ]] || space_error "$name=$dir is not readable by $(id -un)"
  fi
}

space_error() {
  echo "error: $1" >&2
  exit 1
}

check_spaces() {
  check_space COURSE_SCRATCH w
  check_space COURSE_WORK w
  check_space COURSE_DATASETS r
}

# The folders the jobs write to, from the spaces.
checkpoint_dir() { echo "${COURSE_SCRATCH:+$COURSE_SCRATCH/course/}checkpoints"; }
race_home() { echo "${COURSE_WORK:+$COURSE_WORK/course/}race"; }

# announce_spaces: one line saying where this job's outputs go and what it reads.
announce_spaces() {
  local where="checkpoints in $(checkpoint_dir)${COURSE_SCRATCH:+ (scratch)}"
  [[ -z ${COURSE_WORK:-} ]] || where+=", studies and the race in $COURSE_WORK/course (work)"
  [[ -z ${COURSE_DATASETS:-} ]] || where+=", datasets read from $COURSE_DATASETS (read-only)"
  echo "storage: $where"
}
