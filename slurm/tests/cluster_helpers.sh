# Sourced by the tests on the local cluster (slurm_test.sh, race_test.sh, multinode_test.sh,
# container/image_test.sh): starts the cluster (CLUSTER_NODES nodes, default 1, CLUSTER_CPUS CPUs
# each when set) and gives the helpers to fail with a message, to submit through slurm/submit.sh,
# to wait for a job's state and to read its output.

fail() {
  echo "FAILED: $*"
  exit 1
}
slurm/local_cluster.sh start --nodes "${CLUSTER_NODES:-1}" ${CLUSTER_CPUS:+--cpus "$CLUSTER_CPUS"} ||
  fail "the local cluster did not start"
# The nodes share this host (see local_cluster.sh): Open MPI between them over TCP only.
((${CLUSTER_NODES:-1} == 1)) || export OMPI_MCA_btl=self,tcp
state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
wait_for() {  # wait_for JOB STATE SECONDS
  local deadline=$((SECONDS + $3))
  until [[ $(state "$1") == "$2" ]]; do
    ((SECONDS < deadline)) || fail "job $1 is $(state "$1"), not $2, after $3 s"
    sleep 1
  done
}
submit() {  # submit ARGS...: submits through the helper and sets $job
  local out
  out=$(slurm/submit.sh "$@") || fail "slurm/submit.sh $* -> $out"
  job=$(sed -n 's/^submitted job \([0-9]*\) .*/\1/p' <<<"$out")
  [[ -n $job ]] || fail "no job id in: $out"
}
log_of() { slurm/submit.sh --logs "$1" | head -1; }  # the output file Slurm names for a job
output_of() { cat "$(log_of "$1")"; }
