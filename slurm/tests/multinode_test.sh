#!/usr/bin/env bash
# Multi-node jobs on a real 2-node cluster on this machine (slurm/local_cluster.sh start
# --nodes 2: two slurmd, one per node; as root): a day-2 DDP job through slurm/submit.sh
# --nodes 2 and a race entry launched with --nodes 2, one rank per node, srun across the nodes;
# day 4's ZeRO-3 on one rank per node and its pipeline of 2 stages x 2 tensor-parallel ranks on
# 2 ranks per node (each node declares 2 CPUs); a study on a private PostgreSQL server that a job
# started (slurm/hpo_server.sbatch), searched by a job array whose workers run on both nodes.
# Each must be placed on both nodes and train on 2 ranks; the day-2 job, signalled with
# SIGUSR1, checkpoints on both ranks' agreement, requeues and resumes; the race entry's replicas
# end identical and its log has the course's name for 2 nodes. Needs the labs built
# (./test.sh runs it after bazel).
set -uo pipefail
cd "$(dirname "$0")/../.."

CLUSTER_NODES=2 CLUSTER_CPUS=2 source slurm/tests/cluster_helpers.sh
RACE_DIR=$(mktemp -d) STUDY_DIR=$(mktemp -d)
export RACE_DIR RACE_LAB=//solutions/day3_data:race RACE_FLAGS="--budget-s 300 --validation-s 3"
cleanup() {
  tools/postgres/private_server.sh remove "$STUDY_DIR/server" >/dev/null 2>&1
  rm -rf "$RACE_DIR" "$STUDY_DIR"
  rm -f ./ci_pg_hpo*_[0-9]*.out ./ci_pg_hpo*_[0-9]*.err ./hpo_server_[0-9]*.out
  rm -f ./ci_nodes*_[0-9]*.out ./ci_nodes*_[0-9]*.err checkpoints/ci_nodes*_[0-9]*.ckpt \
    checkpoints/race_carol_[0-9]*.ckpt slurm/jobs/ci_nodes_*.sbatch
  rmdir checkpoints slurm/jobs 2>/dev/null
  slurm/local_cluster.sh stop >/dev/null
}
trap cleanup EXIT
on_both_nodes() {  # on_both_nodes JOB: the job was given node1 and node2
  grep -q " NodeList=node\[1-2\]" <<<"$(scontrol show job "$1")" ||
    fail "job $1 was not placed on both nodes: $(scontrol show job "$1" | grep NodeList)"
}

submit --nodes 2 --gpus 1 --cpu --cpus-per-rank 1 --time 10 --name ci_nodes \
  solutions/day2_ddp -- --synthetic 8192 --batch-size 16 --epochs 2 --num-workers 1
day2=$job
log=./ci_nodes_$day2.out
wait_for "$day2" RUNNING 120
deadline=$((SECONDS + 120))
until grep -q "^training" "$log" 2>/dev/null; do
  ((SECONDS < deadline)) || fail "day-2 job $day2 did not start training: $(cat "$log")"
  sleep 0.5
done
on_both_nodes "$day2"
sleep 1  # mid-run: 1,024 steps take several seconds even on the fastest two cores seen
scancel --signal=USR1 "$day2"
wait_for "$day2" COMPLETED 400
grep -q "on 2 rank(s)" "$log" || fail "day-2 job $day2 did not train on 2 ranks: $(cat "$log")"
grep -q "preempted: SIGUSR1 after step" "$log" ./ci_nodes_"$day2".err ||
  fail "day-2 job $day2 was not preempted: $(cat "$log")"
grep -q "resuming from" "$log" || fail "day-2 job $day2 did not resume: $(cat "$log")"
grep -q "^epoch 2: .*test accuracy" "$log" || fail "day-2 job $day2 did not finish: $(cat "$log")"
echo "ok: day-2 job $day2 on 2 nodes: preempted, requeued, resumed, finished"

slurm/race.sh enter carol -- --train-subset 1000 --num-workers 1 --test-nsteps 5 --epochs 1 ||
  fail "carol was not entered"
out=$(slurm/race.sh launch --nodes 2 --gpus 1 --cpu --cpus-per-rank 1 --time 10) ||
  fail "launch failed: $out"
carol=$(sed -n 's/^launched carol: job \([0-9]*\)$/\1/p' <<<"$out")
[[ -n $carol ]] || fail "no job id in: $out"
wait_for "$carol" COMPLETED 300
on_both_nodes "$carol"
log=$(log_of "$carol")
grep -q "replicas: identical weights on all 2 ranks" "$log" ||
  fail "carol did not train on 2 ranks in step: $(cat "$log")"
grep -q '"epoch":1,' "$RACE_DIR/runs/carol.jsonl" || fail "carol has no epoch record"
echo "ok: race entry $carol on 2 nodes, its replicas identical, logged as ${log##*/}"
# day4_on_both_nodes WHAT GPUS EXPECTED FLAGS...: a short day-4 run with FLAGS on 2 nodes of GPUS
# ranks each, placed on both and printing EXPECTED (its mode's line).
day4_on_both_nodes() {
  local what=$1 gpus=$2 expected=$3
  shift 3
  submit --nodes 2 --gpus "$gpus" --cpu --time 10 --name ci_nodes_day4 solutions/day4_large_models \
    -- "$@" --test --test-nsteps 3 --batch-size 4 --context 32 --sample-tokens 0
  wait_for "$job" COMPLETED 300
  on_both_nodes "$job"
  grep -q "$expected" <<<"$(output_of "$job")" ||
    fail "job $job did not run $what: $(output_of "$job")"
  grep -q "training performance" <<<"$(output_of "$job")" || fail "day-4 job $job has no report"
  echo "ok: day-4 job $job ($what, $gpus rank(s) per node) on 2 nodes"
}
day4_on_both_nodes "ZeRO-3" 1 "zero3 over 2 rank(s)" --sharding zero3
day4_on_both_nodes "2 pipeline stages x 2 tensor-parallel ranks" 2 \
  "2 tensor-parallel ranks x 2-stage pipeline" --pipeline-stages 2 --tensor-parallel 2
# A study whose workers run on several nodes, on a PostgreSQL server of its own: the server's job
# on node1, the study created from the login node, 4 workers of 10 trials as a job array.
server_job=$(sbatch --parsable --nodelist=node1 --cpus-per-task=1 --time=10 \
  slurm/hpo_server.sbatch "$STUDY_DIR/server") || fail "the study server's job was not submitted"
deadline=$((SECONDS + 120))
until [[ -s $STUDY_DIR/server/url ]]; do
  ((SECONDS < deadline)) || fail "the study server's job $server_job wrote no URL"
  sleep 0.5
done
url=$(cat "$STUDY_DIR/server/url")
hpo=bazel-bin/solutions/day3_data/hpo
PGPASSFILE=$STUDY_DIR/server/pgpass "$hpo" create --db "$url" --study ci --function himmelblau \
  --seed 5 >/dev/null || fail "hpo create on $url failed"
array=$(HPO=//solutions/day3_data:hpo HPO_SERVER=$STUDY_DIR/server sbatch --parsable \
  --array=0-3 --cpus-per-task=2 --job-name=ci_pg_hpo --time=5 slurm/hpo.sbatch --study ci \
  --trials 10) || fail "the HPO job array was not submitted"
deadline=$((SECONDS + 300))
while [[ -n $(squeue -h -j "$array" 2>/dev/null) ]]; do
  ((SECONDS < deadline)) || fail "HPO job array $array still queued or running after 300 s"
  sleep 1
done
status=$(PGPASSFILE=$STUDY_DIR/server/pgpass "$hpo" status --db "$url" --study ci)
grep -q "40 trials: 40 complete, 0 pruned, 0 failed, 0 running" <<<"$status" ||
  fail "the job array's study on $url is not 40 complete trials: $status"
nodes=$(cat ci_pg_hpo_"$array"_*.out | sed -n 's/^worker on .* (\(node[0-9]*\))$/\1/p' | sort -u)
[[ $(wc -l <<<"$nodes") -eq 2 ]] || fail "the HPO job array's workers ran on: $nodes"
scancel "$server_job"
deadline=$((SECONDS + 60))
until grep -q "stopped the study server" "hpo_server_$server_job.out" 2>/dev/null; do
  ((SECONDS < deadline)) || fail "the study server did not stop: $(cat "hpo_server_$server_job.out")"
  sleep 0.5
done
echo "ok: HPO job array $array on both nodes against the server of job $server_job:" \
  "$(grep -o "40 trials.*" <<<"$status")"
echo "multi-node tests passed"
