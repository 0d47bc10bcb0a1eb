#!/bin/bash
# The segment as real processes under tools/lcirun (segment_check).
#
# usage: segment_launch_test.sh <lcirun> <segment_check> normal <N> <K|->
#        segment_launch_test.sh <lcirun> <segment_check> crash
#
# normal: N ranks (LCI_LOCALITY_RANKS_PER_NODE=K unless "-"); passes when
#   every rank reports its segment, no segment name of the job is left in
#   /dev/shm, and the ranks of each segment agree on the CMA probe (printed:
#   the result on this machine).
# crash: a job whose leader dies by SIGKILL between create and unlink
#   leaves its name; the next job removes it; a job whose non-leader rank
#   dies after attaching leaves nothing (the leader unlinks on the failure).
set -u
lcirun=$1
check=$2
scenario=$3
failed=0

fail() {
  echo "FAIL: $*"
  failed=1
}

# run <output> <expected status> <lcirun arguments...>
run() {
  local output=$1 expected=$2
  shift 2
  timeout 45 "$lcirun" "$@" >"$output" 2>&1
  local status=$?
  cat "$output"
  [ "$status" -eq "$expected" ] || fail "lcirun $* exited with $status, expected $expected"
}

linked() { [ -e "/dev/shm${1}" ]; }

unset LCI_LOCALITY_RANKS_PER_NODE
case "$scenario" in
  normal)
    ranks=$4
    [ "$5" != "-" ] && export LCI_LOCALITY_RANKS_PER_NODE=$5
    out="$TEST_TMPDIR/normal.txt"
    run "$out" 0 -n "$ranks" "$check" normal
    for ((rank = 0; rank < ranks; rank++)); do
      grep -q "^\[$rank\] segment /lci_shm_[0-9a-f_]* rank $rank ok$" "$out" ||
        fail "no segment line from rank $rank"
    done
    for name in $(sed -n 's/.* segment \(\S*\) rank .*/\1/p' "$out" | sort -u); do
      linked "$name" && fail "$name left in /dev/shm"
      ranks_of=$(grep " segment $name rank " "$out" | sed 's/^\[\([0-9]*\)\].*/\1/')
      cma=$(for r in $ranks_of; do grep "^\[$r\] cma " "$out" | cut -d' ' -f2-; done | sort -u)
      [ "$(echo "$cma" | wc -l)" -eq 1 ] && [ -n "$cma" ] ||
        fail "ranks $ranks_of of $name disagree on CMA: $cma"
      echo "CMA between ranks" $ranks_of "on this machine: $cma"
    done ;;
  crash)
    out="$TEST_TMPDIR/leader_crash.txt"
    run "$out" 137 -n 2 "$check" leader_crash
    stale=$(sed -n 's/^\[0\] segment \(\S*\) left$/\1/p' "$out")
    [ -n "$stale" ] || fail "the leader printed no name"
    [ -n "$stale" ] && ! linked "$stale" && fail "$stale gone before the next job"
    run "$TEST_TMPDIR/next.txt" 0 -n 2 "$check" normal
    [ -n "$stale" ] && linked "$stale" && fail "the next job left the stale $stale"

    out="$TEST_TMPDIR/peer_crash.txt"
    run "$out" 137 --grace 20 -n 2 "$check" peer_crash
    name=$(sed -n 's/^\[0\] segment \(\S*\) removed$/\1/p' "$out")
    [ -n "$name" ] || fail "the leader did not report its segment removed"
    [ -n "$name" ] && linked "$name" && fail "$name left in /dev/shm" ;;
  *)
    echo "unknown scenario $scenario"
    exit 2 ;;
esac
exit "$failed"
