#!/usr/bin/env bash
# A real Slurm cluster on this machine, for testing the course's sbatch scripts (slurm-wlm and
# munge from Debian; run as root): munged, slurmctld and slurmd with proctrack/linuxproc and
# task/none, one partition "course" holding this node with all its CPUs and 4 GPU generic
# resources (counted, not real devices, so --gpus-per-node requests behave as on a GPU
# cluster), and job requeueing on. With --nodes N it is N nodes (node1 ... nodeN), each its own
# slurmd on its own port sharing this machine's CPUs, for multi-node jobs (srun across nodes).
# The N nodes share one host: Open MPI's shared-memory transport between ranks that Slurm placed
# on "different" nodes breaks (their segments collide), so multi-node jobs here run with
# OMPI_MCA_btl=self,tcp (slurm/tests/cluster_helpers.sh exports it).
#   slurm/local_cluster.sh start [--nodes N] [--cpus C]  configure and (re)start; waits until
#                                   every node is idle. --cpus: the CPUs each of the N nodes
#                                   declares (default this machine's, shared out), more than
#                                   the machine has to place a 2 x 2 job on 2 cores
#   slurm/local_cluster.sh stop               stop the daemons (jobs are killed)
#   slurm/local_cluster.sh status
# State, logs and configuration live in $COURSE_SLURM_DIR (default /tmp/course-slurm); the
# configuration is written to /etc/slurm, where Slurm's commands look for it.
set -euo pipefail
state=${COURSE_SLURM_DIR:-/tmp/course-slurm}
conf_dir=/etc/slurm
node=$(hostname -s)
nodes=1 node_cpus=""

fail() {
  echo "local_cluster: $*" >&2
  exit 1
}

# The slurm.conf lines of the nodes: this host itself, or N nodes on it (the machine's CPUs and
# memory shared out), each slurmd on its own port.
node_lines() {
  local cpus memory k
  cpus=$(nproc)
  memory=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  if ((nodes == 1)); then
    echo "NodeName=$node CPUs=$cpus RealMemory=$memory Gres=gpu:4 State=UNKNOWN"
    return
  fi
  cpus=${node_cpus:-$((cpus / nodes > 0 ? cpus / nodes : 1))}
  for k in $(seq "$nodes"); do
    echo "NodeName=node$k NodeHostname=$node NodeAddr=127.0.0.1 Port=$((17000 + k))" \
      "CPUs=$cpus RealMemory=$((memory / nodes)) Gres=gpu:4 State=UNKNOWN"
  done
}

node_names() {
  if ((nodes == 1)); then echo "$node"; else seq -f 'node%g' "$nodes"; fi
}

write_config() {
  local names
  names=$(node_names | paste -sd,)
  mkdir -p "$state"/{spool,state,log,tmp} "$conf_dir"
  cat >"$conf_dir/slurm.conf" <<CONF
# Written by slurm/local_cluster.sh: a one-node test cluster.
ClusterName=course
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# A job step's credential lives 20 s (the default, 120 s, suits a busy cluster): a requeued job
# waits that long before it may start again, and the tests requeue preempted jobs.
AuthInfo=cred_expire=20
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
GresTypes=gpu
ReturnToService=2
JobRequeue=1
StateSaveLocation=$state/state
SlurmdSpoolDir=$state/spool/%n
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd-%n.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd-%n.log
# Each node's own temporary folder: PMIx's per-step folders would collide on one host.
TmpFS=$state/tmp/%n
SlurmctldPort=6817
SlurmdPort=6818
MinJobAge=600
KillWait=10
$(node_lines)
PartitionName=course Nodes=$names Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  # Slurm counts a GPU per device file: copies of /dev/null stand in for /dev/nvidia0-3.
  mkdir -p "$state/dev"
  for i in 0 1 2 3; do
    [[ -c $state/dev/gpu$i ]] || mknod "$state/dev/gpu$i" c 1 3
  done
  echo "NodeName=$names Name=gpu File=$state/dev/gpu[0-3]" >"$conf_dir/gres.conf"
  local name
  for name in $(node_names); do mkdir -p "$state/spool/$name" "$state/tmp/$name"; done
}

start_munge() {
  [[ -s /etc/munge/munge.key ]] || {
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  }
  chown -R munge:munge /etc/munge 2>/dev/null || true
  chmod 400 /etc/munge/munge.key
  mkdir -p /run/munge /var/log/munge /var/lib/munge
  chown munge:munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
  pgrep -x munged >/dev/null || runuser -u munge -- munged 2>/dev/null || munged --force
  munge -n | unmunge >/dev/null || fail "munge does not work (see /var/log/munge/munged.log)"
}

start() {
  while (($#)); do
    case $1 in
      --nodes) nodes=${2-}; shift 2 ;;
      --cpus) node_cpus=${2-}; shift 2 ;;
      *) fail "start: unknown option '$1'" ;;
    esac
  done
  [[ $nodes =~ ^[1-9][0-9]?$ ]] || fail "--nodes '$nodes' is not a number of nodes from 1 to 99"
  [[ -z $node_cpus || $node_cpus =~ ^[1-9][0-9]?$ ]] ||
    fail "--cpus '$node_cpus' is not a number of CPUs from 1 to 99"
  ((nodes > 1)) || [[ -z $node_cpus ]] || fail "--cpus is for --nodes 2 or more"
  [[ $(id -u) -eq 0 ]] || fail "start the cluster as root"
  command -v slurmctld >/dev/null || fail "slurmctld is missing: run ./setup.sh"
  stop >/dev/null  # the daemons read the configuration when they start
  write_config
  start_munge
  slurmctld
  local name
  for name in $(node_names); do slurmd -N "$name"; done
  for _ in $(seq 100); do
    if (($(sinfo -h -N -o '%T' 2>/dev/null | grep -cE '^(idle|mixed|allocated)') == nodes)); then
      scontrol update nodename="$(node_names | paste -sd,)" state=resume >/dev/null 2>&1 || true
      echo "local Slurm cluster up: $(sinfo -h -o '%P %D node(s) %c CPUs %G %T')"
      return 0
    fi
    sleep 0.3
  done
  tail -n 5 "$state"/log/*.log >&2 || true
  fail "the nodes did not become idle"
}

stop() {
  pkill -x slurmd || true
  pkill -x slurmctld || true
  for _ in $(seq 50); do
    pgrep -x slurmd >/dev/null || pgrep -x slurmctld >/dev/null || break
    sleep 0.2
  done
  echo "local Slurm cluster stopped"
}

case ${1:-} in
  start) shift; start "$@" ;;
  stop) stop ;;
  status) sinfo && squeue ;;
  *) fail "usage: $0 start [--nodes N] [--cpus C]|stop|status" ;;
esac
