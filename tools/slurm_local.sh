#!/usr/bin/env bash
# A private one-node Slurm cluster on this machine, for the srun launch tests
# (tests/bootstrap: launch_srun_*, run with --config=slurm) and for trying
# programs under srun by hand. Everything lives in one state directory: its
# own munged (key, socket, pid, log, seed), slurm.conf, and slurmctld and
# slurmd with their pid files, logs, state and spool. The system-wide
# /etc/slurm, /etc/munge and the system's munged are never read or started,
# so this neither needs nor disturbs a real Slurm installation.
#
# usage: tools/slurm_local.sh start|stop|status
#   LCI_SLURM_DIR   the state directory (default /tmp/lci-slurm)
#   LCI_SLURM_PORT  slurmctld's port; slurmd takes the next one (default
#                   16817, away from Slurm's 6817/6818 so that a real
#                   installation on the same machine does not clash)
#
# After start (it prints the same):
#   export SLURM_CONF=/tmp/lci-slurm/slurm.conf
#   srun --mpi=pmix -n 2 bazel-bin/examples/hello_world
#   bazel test --config=pmix --config=slurm --test_env=SLURM_CONF //tests/bootstrap/...
#
# start: idempotent; starts whatever is not running, then waits (at most
#        start_wait_s) until sinfo shows the node idle; otherwise prints why
#        (the daemons' log tails), stops what it started and exits 1.
# stop:  idempotent; cancels the cluster's jobs (so no slurmstepd or task is
#        left behind), then ends the three daemons named by its pid files.
# status: each daemon and sinfo; exits 0 only when all three run.
#
# Must run as root: slurmd starts tasks as the submitting user, and
# SlurmUser=root spares creating a slurm account on the machine.
set -euo pipefail

dir=${LCI_SLURM_DIR:-/tmp/lci-slurm}
ctld_port=${LCI_SLURM_PORT:-16817}
slurmd_port=$((ctld_port + 1))
conf="$dir/slurm.conf"
munge_dir="$dir/munge"
munge_socket="$munge_dir/munge.socket.2"
node=$(hostname -s)
start_wait_s=30
stop_wait_s=10

# Each daemon: its process name (as /proc/<pid>/comm shows it) and pid file.
daemons=(munged slurmctld slurmd)
pid_file() {
  case "$1" in
    munged) echo "$munge_dir/munged.pid" ;;
    *) echo "$dir/$1.pid" ;;
  esac
}
log_file() {
  case "$1" in
    munged) echo "$munge_dir/munged.log" ;;
    *) echo "$dir/$1.log" ;;
  esac
}

# The daemon's pid when its pid file names a live process of that name (a
# stale file whose pid was reused by something else does not count).
running_pid() {
  local file pid
  file=$(pid_file "$1")
  [ -f "$file" ] || return 1
  pid=$(tr -dc '0-9' <"$file")
  [ -n "$pid" ] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$1" ] || return 1
  echo "$pid"
}

# Waits up to $2 seconds for a condition command ($3...) to succeed.
wait_for() {
  local what=$1 limit_s=$2 deadline
  shift 2
  deadline=$((SECONDS + limit_s))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "slurm_local: $what not reached within $limit_s s" >&2
      return 1
    fi
    sleep 0.2
  done
}

# A port some other program listens on would make a daemon fail at bind
# with a log line only; say so up front instead.
check_port_free() {
  command -v ss >/dev/null 2>&1 || return 0
  if [ -n "$(ss -Hltn "sport = :$1" 2>/dev/null)" ]; then
    echo "slurm_local: TCP port $1 is in use by another program;" \
      "set LCI_SLURM_PORT to a free pair of ports" >&2
    return 1
  fi
}

write_config() {
  local cpus
  cpus=$(nproc)
  mkdir -p "$dir/ctld" "$dir/spool"
  # Our own (empty) plugin stack, so /etc/slurm/plugstack.conf is not read.
  : >"$dir/plugstack.conf"
  cat >"$conf" <<EOF
# Written by tools/slurm_local.sh; rewritten by each start.
ClusterName=lci
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$(pid_file slurmctld)
SlurmdPidFile=$(pid_file slurmd)
SlurmctldLogFile=$(log_file slurmctld)
SlurmdLogFile=$(log_file slurmd)
PlugStackConfig=$dir/plugstack.conf
# No cgroups (none may be writable here) and no accounting daemon.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# A node that was down (the previous run's stop) comes back by itself.
ReturnToService=2
# Finished jobs leave squeue fast, and stop's cancel ends tasks fast.
MinJobAge=2
KillWait=2
InactiveLimit=0
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=lci Nodes=$node Default=YES MaxTime=60 State=UP
EOF
}

start_munged() {
  mkdir -p "$munge_dir"
  # munged refuses a socket or key directory others may write to.
  chmod 700 "$munge_dir"
  if [ ! -f "$munge_dir/munge.key" ]; then
    mungekey --create --keyfile="$munge_dir/munge.key"
  fi
  # --force: munged declines to run as root without it; root is fine here,
  # since only this machine's root processes talk to it.
  munged --force --key-file="$munge_dir/munge.key" --socket="$munge_socket" \
    --pid-file="$(pid_file munged)" --log-file="$(log_file munged)" \
    --seed-file="$munge_dir/munged.seed"
}

munge_works() {
  munge -n -S "$munge_socket" | unmunge -S "$munge_socket"
}

node_idle() {
  [ "$(SLURM_CONF=$conf sinfo -h -n "$node" -o %t)" = idle ]
}

show_logs() {
  local daemon
  for daemon in "${daemons[@]}"; do
    echo "---- tail of $(log_file "$daemon")" >&2
    tail -n 15 "$(log_file "$daemon")" >&2 2>/dev/null || echo "(no log)" >&2
  done
  echo "---- sinfo" >&2
  SLURM_CONF=$conf sinfo -N -l >&2 2>&1 || true
}

fail_start() {
  echo "slurm_local: start failed: $1" >&2
  show_logs
  stop_all >&2
  exit 1
}

start_all() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "slurm_local: start needs root (slurmd starts tasks as their user)" >&2
    exit 1
  fi
  local daemon missing=0
  for daemon in "${daemons[@]}"; do
    running_pid "$daemon" >/dev/null || missing=1
  done
  mkdir -p "$dir"
  if [ "$missing" -eq 1 ]; then
    running_pid slurmctld >/dev/null || check_port_free "$ctld_port" ||
      exit 1
    running_pid slurmd >/dev/null || check_port_free "$slurmd_port" || exit 1
    # A running slurmctld keeps the config it read; rewrite only when it
    # starts afresh with the others.
    running_pid slurmctld >/dev/null || write_config
  fi
  if ! running_pid munged >/dev/null; then
    start_munged || fail_start "munged did not start"
  fi
  wait_for "munged answering on $munge_socket" 10 munge_works ||
    fail_start "munged does not answer"
  if ! running_pid slurmctld >/dev/null; then
    # -c: the state directory holds only earlier test runs' jobs.
    slurmctld -f "$conf" -c || fail_start "slurmctld did not start"
  fi
  if ! running_pid slurmd >/dev/null; then
    slurmd -f "$conf" || fail_start "slurmd did not start"
  fi
  wait_for "node $node idle" "$start_wait_s" node_idle ||
    fail_start "node $node is not idle after $start_wait_s s"
  echo "slurm_local: node $node idle; export SLURM_CONF=$conf"
}

# Sends SIGTERM, then SIGKILL after stop_wait_s, to the daemon of the pid
# file; nothing when it is not running.
stop_daemon() {
  local pid
  pid=$(running_pid "$1") || { rm -f "$(pid_file "$1")"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_for "$1 (pid $pid) exit" "$stop_wait_s" \
    bash -c "[ ! -e /proc/$pid ]"; then
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$(pid_file "$1")"
  echo "slurm_local: stopped $1 (pid $pid)"
}

no_jobs() {
  [ -z "$(SLURM_CONF=$conf squeue -h -o %i)" ]
}

stop_all() {
  if running_pid slurmctld >/dev/null && running_pid munged >/dev/null; then
    # Every job of this cluster was started through it; ending them lets
    # slurmd reap their slurmstepd and tasks before it goes.
    local jobs
    jobs=$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
      # shellcheck disable=SC2086  # one job id per word
      SLURM_CONF=$conf scancel $jobs || true
      wait_for "no jobs left" "$stop_wait_s" no_jobs || true
    fi
  fi
  stop_daemon slurmd
  stop_daemon slurmctld
  stop_daemon munged
}

status_all() {
  local daemon pid all=0
  for daemon in "${daemons[@]}"; do
    if pid=$(running_pid "$daemon"); then
      echo "$daemon: running (pid $pid)"
    else
      echo "$daemon: not running"
      all=1
    fi
  done
  if [ "$all" -eq 0 ]; then
    SLURM_CONF=$conf sinfo -N -l || all=1
    echo "export SLURM_CONF=$conf"
  fi
  return "$all"
}

case "${1:-}" in
  start) start_all ;;
  stop) stop_all ;;
  status) status_all ;;
  *)
    echo "usage: $0 start|stop|status (state in \$LCI_SLURM_DIR," \
      "default /tmp/lci-slurm)" >&2
    exit 2
    ;;
esac
