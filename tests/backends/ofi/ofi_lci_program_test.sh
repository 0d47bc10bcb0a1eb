#!/bin/bash
# Runs ofi_lci_program (an LCI program on the process host) as N ranks under
# tools/lcirun over one libfabric provider; passes when lcirun exits 0 and
# every rank printed "rank <r> of <N> ok".
#
# usage: ofi_lci_program_test.sh <provider> <N> <ofi_lci_program> <lcirun>
set -u
provider=$1
ranks=$2
binary=$3
lcirun=$4
output="${TEST_TMPDIR}/output.txt"
limit_s=50

unset LCI_BOOTSTRAP PMI_FD PMI_RANK PMI_SIZE PMIX_RANK PMIX_NAMESPACE \
  LCIRUN_ADDR LCIRUN_RANK LCIRUN_SIZE LCIRUN_JOB

LCI_ATTR_OFI_PROVIDER_NAME="$provider" timeout "$limit_s" \
  "$lcirun" -n "$ranks" --timeout "$((limit_s - 5))" "$binary" >"$output" 2>&1
status=$?
cat "$output"

failed=0
if [ "$status" -ne 0 ]; then
  echo "FAIL: lcirun exited with status $status ($provider, $ranks ranks)"
  failed=1
fi
for ((rank = 0; rank < ranks; rank++)); do
  if ! grep -q "^\[$rank\] rank $rank of $ranks ok$" "$output"; then
    echo "FAIL: no ok line from rank $rank ($provider, $ranks ranks)"
    failed=1
  fi
done
exit "$failed"
