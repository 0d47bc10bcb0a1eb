#!/bin/bash
# The launcher's behaviour as a user sees it: exit codes (first failure,
# signals, timeout, usage), termination of the other ranks, output prefixes,
# the environment it gives ranks, and errors reaching a rank through the
# bootstrap (wrong job token, a rank gone before a collective).
#
# usage: lcirun_test.sh <lcirun> <bootstrap_check>
set -u
lcirun=$1
check=$2
work="$TEST_TMPDIR"
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# run <name> <lcirun args...>: status in $status, output in $work/<name>.out
# and $work/<name>.err.
run() {
  local name=$1
  shift
  "$lcirun" "$@" >"$work/$name.out" 2>"$work/$name.err"
  status=$?
  echo "== $name: status $status"
  sed 's/^/  out: /' "$work/$name.out"
  sed 's/^/  err: /' "$work/$name.err"
}

expect_status() {
  [ "$status" -eq "$2" ] || fail "$1: status $status, expected $2"
}

expect_line() {  # <name> <out|err> <fixed string>
  grep -qF -- "$3" "$work/$1.$2" || fail "$1: no '$3' on std$2"
}

# Each rank's shell records its pid and then becomes a long sleep; after
# lcirun returns, none of those pids may still be alive.
expect_all_dead() {
  local name=$1 pid_file pid
  for pid_file in "$work/$name".pid.*; do
    [ -e "$pid_file" ] || { fail "$name: no pid files"; return; }
    pid=$(cat "$pid_file")
    if kill -0 "$pid" 2>/dev/null; then
      fail "$name: $(basename "$pid_file") (pid $pid) still runs"
      kill -9 "$pid"
    fi
  done
}

# --- the first failing rank's exit code propagates; the others are killed
# Rank 2 fails once every other rank is up (bounded wait of 20 s).
run first_failure -n 4 bash -c '
  echo $$ > "'"$work"'/first_failure.pid.$LCIRUN_RANK"
  if [ "$LCIRUN_RANK" = 2 ]; then
    for i in $(seq 200); do
      [ $(ls "'"$work"'"/first_failure.pid.* | wc -l) -eq 4 ] && break
      sleep 0.1
    done
    exit 3
  fi
  exec sleep 60'
expect_status first_failure 3
expect_line first_failure err "lcirun: rank 2 exited with code 3; terminating ranks 0 1 3"
expect_all_dead first_failure

# --- a rank killed by a signal: 128 + the signal's number
run signal -n 2 bash -c '[ "$LCIRUN_RANK" = 1 ] && kill -SEGV $$; exec sleep 60'
expect_status signal 139
expect_line signal err "lcirun: rank 1 was killed by SIGSEGV"

# --- --grace: after rank 1 dies, rank 0 finishes on its own (its line is
# forwarded); the status stays the first failure's
run grace -n 2 --grace 30 bash -c '[ "$LCIRUN_RANK" = 1 ] && kill -KILL $$; sleep 1; echo survived'
expect_status grace 137
expect_line grace err "lcirun: rank 1 was killed by SIGKILL; giving ranks 0 up to 30 s to finish"
expect_line grace out "[0] survived"

# --- the timeout: 124, naming the ranks still running (rank 1 has 3 s to
# start and exit even on a loaded machine)
run timeout -n 3 --timeout 3 bash -c '
  echo $$ > "'"$work"'/timeout.pid.$LCIRUN_RANK"
  [ "$LCIRUN_RANK" = 1 ] && exit 0
  exec sleep 60'
expect_status timeout 124
expect_line timeout err "lcirun: timeout after 3 s; ranks still running: 0 2"
expect_all_dead timeout

# --- output: one prefix per line, stdout and stderr kept apart, an
# unterminated last line still forwarded
run output -n 2 bash -c 'echo "out $LCIRUN_RANK"; echo "err $LCIRUN_RANK" >&2
  printf "tail $LCIRUN_RANK"'
expect_status output 0
expect_line output out "[0] out 0"
expect_line output out "[1] out 1"
expect_line output out "[1] tail 1"
expect_line output err "[0] err 0"
grep -q "err" "$work/output.out" && fail "output: stderr lines on stdout"

# --- the environment each rank gets
run environment -n 2 bash -c 'echo "$LCIRUN_RANK/$LCIRUN_SIZE $LCIRUN_ADDR ${#LCIRUN_JOB}"'
expect_status environment 0
grep -qE '^\[1\] 1/2 127\.0\.0\.1:[0-9]+ 16$' "$work/environment.out" ||
  fail "environment: rank 1's LCIRUN_* variables are not as documented"
# HPX's LCI parcelport stays off unless a launcher variable it knows is set;
# LCT_PMI_FILE_NRANKS is one (the job size, as upstream's launcher sets it).
run hpx_detect -n 3 bash -c 'echo "nranks=${LCT_PMI_FILE_NRANKS:-unset}"'
expect_status hpx_detect 0
[ "$(grep -c '^\[[0-2]\] nranks=3$' "$work/hpx_detect.out")" -eq 3 ] ||
  fail "hpx_detect: LCT_PMI_FILE_NRANKS is not the job size in every rank"

# --- errors a rank's bootstrap receives from the launcher
# A rank is stopped by SIGTERM's default action: libinfinipath's handler
# (loaded with Debian's libfabric), which would call exit() under the
# rank's threads, stays off unless the caller asks for it.
run no_backtrace -n 1 bash -c 'echo "backtrace handler off: ${IPATH_NO_BACKTRACE-unset}"'
expect_line no_backtrace out "backtrace handler off: 1"
IPATH_NO_BACKTRACE=0 run no_backtrace_kept -n 1 bash -c 'echo "kept: $IPATH_NO_BACKTRACE"'
expect_line no_backtrace_kept out "kept: 0"

run wrong_job -n 1 env LCIRUN_JOB=wrong "$check"
expect_status wrong_job 1
expect_line wrong_job err "wrong job token"

run rank_gone -n 2 bash -c '[ "$LCIRUN_RANK" = 1 ] && exit 0; exec "$0"' "$check"
expect_status rank_gone 1
expect_line rank_gone err "rank 1 exited with code 0 before entering fence"

# --- success, usage errors, a program that cannot start
run success -n 3 true
expect_status success 0
run no_program -n 2
expect_status no_program 2
run zero_ranks -n 0 true
expect_status zero_ranks 2
run missing_program -n 2 "$work/no-such-program"
expect_status missing_program 127
expect_line missing_program err "lcirun: cannot start"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all lcirun checks passed"
