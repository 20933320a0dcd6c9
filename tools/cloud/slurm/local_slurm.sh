#!/usr/bin/env bash
# A throwaway single-node Slurm in one folder, for trying strata.sbatch on
# one machine and for Strata's tests: munged, slurmctld and slurmd from
# Debian's packages (slurm-wlm, munge), every file (key, sockets, state,
# logs, slurm.conf) inside DIR, on ports of its own, so it touches nothing
# of the machine's. It declares CPUS CPUs whatever the machine has and lets
# jobs share them (OverSubscribe), so a 2-core machine runs a 4-task job.
#
#   tools/cloud/slurm/local_slurm.sh start DIR [CPUS]   # prints the SLURM_CONF to export
#   SLURM_CONF=DIR/slurm.conf sbatch --wait -n 4 tools/cloud/slurm/strata.sbatch job.json ...
#   tools/cloud/slurm/local_slurm.sh stop DIR           # cancels jobs, stops the daemons
#
# Needs root (slurmd runs jobs as their users). start waits until the node
# is idle and fails with the daemons' logs if it never is; stop leaves no
# daemon or job running.
set -euo pipefail

usage() { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "local_slurm: $*" >&2; exit 1; }

[[ $# -ge 2 ]] || { usage >&2; exit 2; }
action="$1"
dir="$(mkdir -p "$2" && cd "$2" && pwd)"
cpus="${3:-8}"

# A port nothing listens on, from the kernel's ephemeral range.
free_port() {
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 20000))
    if ! ss -ltnH "sport = :$port" | grep -q .; then
      echo "$port"
      return
    fi
  done
  die "no free port found"
}

stop_pid_file() {
  local file="$1" pid
  [[ -s "$file" ]] || return 0
  pid="$(cat "$file")"
  kill "$pid" 2> /dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2> /dev/null || { rm -f "$file"; return 0; }
    sleep 0.1
  done
  kill -9 "$pid" 2> /dev/null || true
  rm -f "$file"
}

start() {
  [[ $(id -u) -eq 0 ]] || die "needs root (slurmd starts jobs as their users)"
  for program in munged slurmctld slurmd sinfo; do
    command -v "$program" > /dev/null || die "$program is missing: apt-get install slurm-wlm munge"
  done
  [[ ! -s "$dir/slurmctld.pid" ]] || die "a Slurm runs in $dir already (stop it first)"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log"
  local host
  host="$(uname -n)"  # coreutils: a minimal Debian has no hostname(1)
  host="${host%%.*}"
  dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 status=none
  chmod 600 "$dir/munge.key"
  munged --force --key-file="$dir/munge.key" --socket="$dir/munge.sock" \
    --pid-file="$dir/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munged.seed"
  cat > "$dir/slurm.conf" << CONF
# Written by local_slurm.sh: a single-node Slurm in $dir.
ClusterName=strata-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# The node declares $cpus CPUs whatever this machine has.
SlurmdParameters=config_overrides
ReturnToService=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  slurmctld -f "$dir/slurm.conf"
  slurmd -f "$dir/slurm.conf"
  for _ in $(seq 1 100); do
    if SLURM_CONF="$dir/slurm.conf" sinfo -h -o '%t' 2> /dev/null | grep -qx idle; then
      echo "SLURM_CONF=$dir/slurm.conf"
      return 0
    fi
    sleep 0.2
  done
  echo "local_slurm: the node never became idle; the daemons' logs:" >&2
  tail -n 20 "$dir"/log/*.log >&2 || true
  stop
  exit 1
}

stop() {
  if [[ -s "$dir/slurmctld.pid" ]]; then
    SLURM_CONF="$dir/slurm.conf" scancel --full --quiet --user=root 2> /dev/null || true
    for _ in $(seq 1 50); do
      SLURM_CONF="$dir/slurm.conf" squeue -h 2> /dev/null | grep -q . || break
      sleep 0.2
    done
  fi
  stop_pid_file "$dir/slurmd.pid"
  stop_pid_file "$dir/slurmctld.pid"
  stop_pid_file "$dir/munged.pid"
}

case "$action" in
  start) start ;;
  stop) stop ;;
  *) usage >&2; exit 2 ;;
esac
