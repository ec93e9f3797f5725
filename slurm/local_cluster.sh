#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for testing the course's sbatch scripts
# (slurm-wlm and munge from Debian; run as root): munged, slurmctld and slurmd with
# proctrack/linuxproc and task/none, one partition "course" holding this node with all its
# CPUs and 4 GPU generic resources (counted, not real devices, so --gpus-per-node requests
# behave as on a GPU cluster), and job requeueing on.
#   slurm/local_cluster.sh start     configure and start; waits until the node is idle
#   slurm/local_cluster.sh stop      stop the daemons (jobs are killed)
#   slurm/local_cluster.sh status
# State, logs and configuration live in $COURSE_SLURM_DIR (default /tmp/course-slurm); the
# configuration is written to /etc/slurm, where Slurm's commands look for it.
set -euo pipefail
state=${COURSE_SLURM_DIR:-/tmp/course-slurm}
conf_dir=/etc/slurm
node=$(hostname -s)

fail() {
  echo "local_cluster: $*" >&2
  exit 1
}

write_config() {
  mkdir -p "$state"/{spool,state,log} "$conf_dir"
  local cpus memory
  cpus=$(nproc)
  memory=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  cat >"$conf_dir/slurm.conf" <<CONF
# Written by slurm/local_cluster.sh: a one-node test cluster.
ClusterName=course
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
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
SlurmdSpoolDir=$state/spool
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
MinJobAge=600
KillWait=10
NodeName=$node CPUs=$cpus RealMemory=$memory Gres=gpu:4 State=UNKNOWN
PartitionName=course Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  # Slurm counts a GPU per device file: copies of /dev/null stand in for /dev/nvidia0-3.
  mkdir -p "$state/dev"
  for i in 0 1 2 3; do
    [[ -c $state/dev/gpu$i ]] || mknod "$state/dev/gpu$i" c 1 3
  done
  echo "NodeName=$node Name=gpu File=$state/dev/gpu[0-3]" >"$conf_dir/gres.conf"
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
  [[ $(id -u) -eq 0 ]] || fail "start the cluster as root"
  command -v slurmctld >/dev/null || fail "slurmctld is missing: run ./setup.sh"
  write_config
  start_munge
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd
  for _ in $(seq 100); do
    if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      scontrol update nodename="$node" state=resume >/dev/null 2>&1 || true
      echo "local Slurm cluster up: $(sinfo -h -o '%P %D node(s) %c CPUs %G %T')"
      return 0
    fi
    sleep 0.3
  done
  tail -n 5 "$state/log/slurmctld.log" "$state/log/slurmd.log" >&2 || true
  fail "the node did not become idle"
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
  start) start ;;
  stop) stop ;;
  status) sinfo && squeue ;;
  *) fail "usage: $0 start|stop|status" ;;
esac
