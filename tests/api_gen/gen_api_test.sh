#!/bin/sh
# Runs the API description parser's unit tests (gen_api_test.py) with the
# system python3, from the runfiles root so `tools.api_gen` is importable.
set -eu
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
PYTHONPATH=. exec python3 tests/api_gen/gen_api_test.py
