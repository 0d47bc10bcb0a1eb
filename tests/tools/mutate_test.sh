#!/bin/sh
# Runs the unit tests of tools/mutate (mutate_test.py: equivalence markers,
# recorded runs) with the system python3.
set -eu
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
exec python3 tests/tools/mutate_test.py tools/mutate
