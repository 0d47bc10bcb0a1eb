#!/bin/bash
# Runs the backend conformance suite (ofi_conformance) as N processes under
# tools/lcirun over one libfabric provider; passes when lcirun exits 0 and
# every rank's gtest run ended with "[  PASSED  ]".
#
# usage: ofi_conformance_test.sh <provider> <N> <ofi_conformance> <lcirun>
#
# A crashed rank leaves its shm segments in /dev/shm (names "<pid>:..."):
# they are removed at the end when their process no longer exists.
set -u
provider=$1
ranks=$2
binary=$3
lcirun=$4
output="${TEST_TMPDIR}/output.txt"
# Below Bazel's limit for size = "medium" (300 s), so a hang reports here.
limit_s=150

unset LCI_BOOTSTRAP PMI_FD PMI_RANK PMI_SIZE PMIX_RANK PMIX_NAMESPACE \
  LCIRUN_ADDR LCIRUN_RANK LCIRUN_SIZE LCIRUN_JOB

LCI_ATTR_OFI_PROVIDER_NAME="$provider" timeout "$limit_s" \
  "$lcirun" -n "$ranks" --timeout "$((limit_s - 10))" "$binary" >"$output" 2>&1
status=$?
cat "$output"

# Segments of processes that are gone (a crash skips shm's own cleanup).
for segment in /dev/shm/*; do
  name=$(basename "$segment")
  pid=${name%%:*}
  if [[ "$pid" =~ ^[0-9]+$ && "$name" == *:* ]] && ! kill -0 "$pid" 2>/dev/null; then
    rm -f "$segment"
  fi
done

failed=0
if [ "$status" -ne 0 ]; then
  echo "FAIL: lcirun exited with status $status ($provider, $ranks ranks)"
  failed=1
fi
passed=$(grep -c "\[  PASSED  \]" "$output")
if [ "$passed" -ne "$ranks" ]; then
  echo "FAIL: $passed of $ranks ranks reported [  PASSED  ]"
  failed=1
fi
exit "$failed"
