#!/usr/bin/env bash
# The submit helper's and the race's job scripts without a cluster (--dry-run): one node and
# several, the GPU request per node, the lab flags shell-quoted, a lab in a container, the race's
# log names and nightly line; bad node counts, container runtimes and a multi-rank day-1 job
# refused with one message.
set -uo pipefail
source "$1"  # expect
submit=$2
race=$3

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
