#!/usr/bin/env bash
# The submit helper's and the race's job scripts without a cluster (--dry-run): one node and
# several, the GPU request per node, the lab flags shell-quoted, a lab in a container, the race's
# log names and nightly line; bad node counts, container runtimes and a multi-rank day-1 job
# refused with one message; the storage spaces' folders, and a space that is no directory.
set -uo pipefail
source "$1"  # expect
submit=$2
race=$3
spaces=$4

script=$("$submit" --dry-run --nodes 2 --gpus 4 --time 1:00:00 day2_ddp -- -b 256 --lr '0.1;x')
for line in "#SBATCH --nodes=2" "#SBATCH --ntasks-per-node=4" "#SBATCH --gpus-per-node=4" \
  "#SBATCH --time=1:00:00" "run_lab //day2_ddp:lab -b 256 --lr 0.1\;x"; do
  grep -qxF -- "$line" <<<"$script" || { echo "FAILED: no '$line' in:"; echo "$script"; exit 1; }
done
echo "ok: 2 nodes x 4 GPUs"
script=$("$submit" --dry-run --cpu --gpus 2 solutions/day2_ddp)
grep -qxF "#SBATCH --nodes=1" <<<"$script" || { echo "FAILED: one node by default"; exit 1; }
if grep -q "gpus-per-node" <<<"$script"; then echo "FAILED: --cpu asked for GPUs"; exit 1; fi
echo "ok: one node of CPU ranks"
script=$("$submit" --dry-run --container course.sif solutions/day2_ddp)
grep -qxF "export COURSE_CONTAINER=course.sif COURSE_CONTAINER_RUNTIME=apptainer" <<<"$script" ||
  { echo "FAILED: no container line in:"; echo "$script"; exit 1; }
script=$("$submit" --dry-run --container localhost/course --container-runtime podman day2_ddp)
grep -qxF "export COURSE_CONTAINER=localhost/course COURSE_CONTAINER_RUNTIME=podman" <<<"$script" ||
  { echo "FAILED: no Podman container line in:"; echo "$script"; exit 1; }
echo "ok: a lab in a container"
expect 1 "--container-runtime (apptainer, pyxis or podman) 'docker' is not valid" "$submit" --dry-run \
  --container course.sif --container-runtime docker day2_ddp
expect 1 "--container (a path or an image name) 'a b' is not valid" "$submit" --dry-run \
  --container "a b" day2_ddp
expect 1 "--nodes (a positive number) '0' is not valid" "$submit" --dry-run --nodes 0 day2_ddp
expect 1 "--nodes (a positive number) 'two' is not valid" "$submit" --dry-run --nodes two day2_ddp
expect 1 "day 1's lab runs one process" "$submit" --dry-run --nodes 2 day1_gpu

# Every day's lab, the trainee's and the solution's; every job's CPUs on whole cores.
for lab in day1_gpu day2_ddp day3_data day4_large_models; do
  for prefix in "" solutions/; do
    script=$("$submit" --dry-run "$prefix$lab") || { echo "FAILED: $prefix$lab refused"; exit 1; }
    for line in "#SBATCH --hint=nomultithread" "run_lab //$prefix$lab:lab"; do
      grep -qxF -- "$line" <<<"$script" || { echo "FAILED: no '$line' in:"; echo "$script"; exit 1; }
    done
  done
done
echo "ok: the eight labs, on whole cores"
# Day 3: a CPU for each loader worker beside the rank's own thread.
expect_cpus() {  # expect_cpus N SUBMIT-ARGS...: the job asks for N CPUs per rank
  local want=$1 got
  shift
  got=$("$submit" --dry-run "$@" | sed -n 's/^#SBATCH --cpus-per-task=//p')
  [[ $got == "$want" ]] || { echo "FAILED: $* asks for '$got' CPUs per rank, not $want"; exit 1; }
}
expect_cpus 4 --cpu --gpus 2 day3_data -- --num-workers 3
expect_cpus 1 solutions/day3_data -- --num-workers=0
expect_cpus 8 day3_data
expect_cpus 8 day3_data -- --num-workers -1
expect_cpus 6 --cpus-per-rank 6 day3_data -- --num-workers 2
expect_cpus 1 day2_ddp -- --num-workers 3
echo "ok: day 3's CPUs per rank follow its loader workers"
expect 1 "day 3's 3 loader worker(s) and each rank's own thread need --cpus-per-rank 4 or more (got 2)" \
  "$submit" --dry-run --cpus-per-rank 2 day3_data -- --num-workers 3
expect 1 "the lab's --num-workers (0 or more) 'many' is not valid" "$submit" --dry-run day3_data -- \
  --num-workers many
# Day 4: the grid's flags through, its ranks a multiple of tp x cp x pp.
script=$("$submit" --dry-run --nodes 2 --gpus 2 day4_large_models -- --tensor-parallel 2 \
  --pipeline-stages=2)
for line in "#SBATCH --nodes=2" "#SBATCH --ntasks-per-node=2" \
  "run_lab //day4_large_models:lab --tensor-parallel 2 --pipeline-stages=2"; do
  grep -qxF -- "$line" <<<"$script" || { echo "FAILED: no '$line' in:"; echo "$script"; exit 1; }
done
"$submit" --dry-run --nodes 3 --gpus 4 day4_large_models -- --context-parallel 2 \
  --tensor-parallel 2 >/dev/null || { echo "FAILED: 12 ranks as 3 replicas of cp 2 x tp 2"; exit 1; }
echo "ok: day 4's grid on 2 nodes"
expect 1 "--nodes 1 x --gpus 3 = 3 rank(s) is no multiple of the grid's 2 (--tensor-parallel 2 x --context-parallel 1 x --pipeline-stages 1): ask for a multiple of 2 ranks" \
  "$submit" --dry-run --gpus 3 day4_large_models -- --tensor-parallel 2
expect 1 "--nodes 1 x --gpus 2 = 2 rank(s) is no multiple of the grid's 8" "$submit" --dry-run \
  --gpus 2 solutions/day4_large_models -- --pipeline-stages 4 --tensor-parallel 1 \
  --tensor-parallel=2
expect 1 "the lab's --pipeline-stages (a positive number) '0' is not valid" "$submit" --dry-run \
  day4_large_models -- --pipeline-stages 0

# A race entry on 2 nodes of 4 GPUs: 8 ranks, named so in its log.
export RACE_DIR=$TEST_TMPDIR/race
mkdir -p "$RACE_DIR/entries"
printf '%s\n' --lr 0.2 --epochs 3 >"$RACE_DIR/entries/alice.flags"
script=$("$race" launch --dry-run --nodes 2 --gpus 4)
for line in "#SBATCH --nodes=2" "#SBATCH --ntasks-per-node=4" "#SBATCH --gpus-per-node=4"; do
  grep -qxF -- "$line" <<<"$script" || { echo "FAILED: no '$line' in:"; echo "$script"; exit 1; }
done
grep -qE "^#SBATCH --output=$RACE_DIR/logs/alice@[a-z]+_%j_2nodes_8tasks_[0-9-]+\.out$" \
  <<<"$script" || { echo "FAILED: the log name in:"; echo "$script"; exit 1; }
grep -qE "^run_lab //day3_data:race --metrics .*/runs/alice.jsonl .* --lr 0.2 --epochs 3$" \
  <<<"$script" || { echo "FAILED: the entry's command in:"; echo "$script"; exit 1; }
echo "ok: a race entry on 2 nodes x 4 GPUs"
expect 0 "0 18 * * * $(cd "$(dirname "$race")/.." && pwd)/slurm/race.sh launch --nodes 2 --gpus 4" \
  "$race" launch --scrontab --nodes 2 --gpus 4
expect 1 "--nodes (a positive number) '-1' is not valid" "$race" launch --dry-run --nodes -1

# The site's storage spaces (slurm/spaces.sh): unset or empty, the repository's folders.
tmp=$(mktemp -d)
touch "$tmp/file"
got=$(source "$spaces" && check_spaces && echo "$(checkpoint_dir) $(race_home)")
[[ $got == "checkpoints race" ]] ||
  { echo "FAILED: without spaces, checkpoints/ and race/"; exit 1; }
got=$(COURSE_SCRATCH=$tmp COURSE_WORK="" && source "$spaces" && check_spaces && checkpoint_dir &&
  announce_spaces)
want="storage: checkpoints in $tmp/course/checkpoints (scratch)"
[[ $got == "$tmp/course/checkpoints"$'\n'"$want" ]] ||
  { echo "FAILED: checkpoints on the scratch space: $got"; exit 1; }
got=$(COURSE_WORK=$tmp COURSE_DATASETS=$tmp && source "$spaces" && race_home && announce_spaces)
want="storage: checkpoints in checkpoints, studies and the race in $tmp/course (work), datasets"
[[ $got == "$tmp/course/race"$'\n'"$want read from $tmp (read-only)" ]] ||
  { echo "FAILED: the race on the work space: $got"; exit 1; }
no_space() { (source "$spaces"; check_spaces); }
COURSE_DATASETS=$tmp/file expect 1 "error: COURSE_DATASETS=$tmp/file is no directory" no_space
COURSE_SCRATCH=$tmp/none expect 1 "error: COURSE_SCRATCH=$tmp/none is no directory" no_space
rm -rf "$tmp"
echo "ok: the storage spaces"
