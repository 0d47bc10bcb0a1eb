#!/bin/sh
# Runs lcirun_exchange_test.py (tools/lcirun's exchange, unit-tested) with
# the system python3 from the runfiles root, where it finds tools/lcirun.
set -eu
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
exec python3 tests/bootstrap/lcirun_exchange_test.py
