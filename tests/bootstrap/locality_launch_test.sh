#!/bin/bash
# Runs locality_check as N ranks under tools/lcirun, with
# LCI_LOCALITY_RANKS_PER_NODE=K unless K is "-", and passes when lcirun exits
# 0, every rank printed its ok line, and all ranks hold one job token that is
# not all zeros.
#
# usage: locality_launch_test.sh <lcirun> <locality_check> <N> <K|->
set -u
lcirun=$1
check=$2
ranks=$3
pretend=$4
output="${TEST_TMPDIR}/output.txt"

unset LCI_LOCALITY_RANKS_PER_NODE
if [ "$pretend" != "-" ]; then
  export LCI_LOCALITY_RANKS_PER_NODE=$pretend
fi
timeout 45 "$lcirun" -n "$ranks" "$check" >"$output" 2>&1
status=$?
cat "$output"

failed=0
if [ "$status" -ne 0 ]; then
  echo "FAIL: lcirun exited with status $status"
  failed=1
fi
for ((rank = 0; rank < ranks; rank++)); do
  if ! grep -q "^\[$rank\] locality rank $rank of $ranks node [0-9]* token [0-9a-f]* ok$" \
    "$output"; then
    echo "FAIL: no ok line from rank $rank"
    failed=1
  fi
done
tokens=$(sed -n 's/.* token \([0-9a-f]*\) ok$/\1/p' "$output" | sort -u)
if [ "$(echo "$tokens" | wc -l)" -ne 1 ] || [ -z "$tokens" ]; then
  echo "FAIL: the ranks hold different job tokens: $tokens"
  failed=1
elif [ -z "$(echo "$tokens" | tr -d 0)" ]; then
  echo "FAIL: the job token is all zeros"
  failed=1
fi
exit "$failed"
