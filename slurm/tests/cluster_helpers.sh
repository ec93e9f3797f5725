# Sourced by the tests on the local cluster (slurm_test.sh, race_test.sh, multinode_test.sh):
# starts the cluster (CLUSTER_NODES nodes, default 1) and gives the helpers to fail with a
# message and to wait for a job's state.

fail() {
  echo "FAILED: $*"
  exit 1
}
slurm/local_cluster.sh start --nodes "${CLUSTER_NODES:-1}" || fail "the local cluster did not start"
state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
wait_for() {  # wait_for JOB STATE SECONDS
  local deadline=$((SECONDS + $3))
  until [[ $(state "$1") == "$2" ]]; do
    ((SECONDS < deadline)) || fail "job $1 is $(state "$1"), not $2, after $3 s"
    sleep 1
  done
}
