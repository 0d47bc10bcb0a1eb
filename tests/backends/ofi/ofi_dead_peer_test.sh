#!/bin/bash
# Runs ofi_dead_peer as 2 ranks under tools/lcirun over one provider; passes
# when lcirun exits 0 and rank 0 printed "dead peer reported: ".
#
# usage: ofi_dead_peer_test.sh <provider> <ofi_dead_peer> <lcirun>
set -u
provider=$1
binary=$2
lcirun=$3
output="${TEST_TMPDIR}/output.txt"
limit_s=50

unset LCI_BOOTSTRAP PMI_FD PMI_RANK PMI_SIZE PMIX_RANK PMIX_NAMESPACE \
  LCIRUN_ADDR LCIRUN_RANK LCIRUN_SIZE LCIRUN_JOB

LCI_ATTR_OFI_PROVIDER_NAME="$provider" timeout "$limit_s" \
  "$lcirun" -n 2 --timeout "$((limit_s - 5))" "$binary" >"$output" 2>&1
status=$?
cat "$output"

# Rank 1 "crashed": remove the shm segments of processes that are gone.
for segment in /dev/shm/*; do
  name=$(basename "$segment")
  pid=${name%%:*}
  if [[ "$pid" =~ ^[0-9]+$ && "$name" == *:* ]] && ! kill -0 "$pid" 2>/dev/null; then
    rm -f "$segment"
  fi
done

if [ "$status" -ne 0 ]; then
  echo "FAIL: lcirun exited with status $status ($provider)"
  exit 1
fi
if ! grep -q "^\[0\] dead peer reported: " "$output"; then
  echo "FAIL: rank 0 did not report the dead peer ($provider)"
  exit 1
fi
exit 0
