#!/bin/sh
# Fails when a committed page of docs/reference/ differs from what
# tools/api_gen/gen_reference.py writes from lci/api/lci_api.def
# (//lci/api:reference), and says how to regenerate it.
set -eu
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
status=0
for page in api attributes environment; do
  if ! diff -u "docs/reference/${page}.md" "lci/api/reference/${page}.md"; then
    echo "docs/reference/${page}.md is not what lci/api/lci_api.def generates"
    status=1
  fi
done
if [ "${status}" -ne 0 ]; then
  echo "regenerate: bazel build //lci/api:reference &&" \
       "cp -f bazel-bin/lci/api/reference/*.md docs/reference/"
fi
exit "${status}"
