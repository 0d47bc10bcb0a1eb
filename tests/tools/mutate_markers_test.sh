#!/bin/sh
# Runs the unit tests of tools/mutate's equivalence markers
# (mutate_markers_test.py) with the system python3.
set -eu
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
exec python3 tests/tools/mutate_markers_test.py tools/mutate
