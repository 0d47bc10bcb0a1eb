#!/bin/sh
# Runs the link checker's unit tests (check_links_test.py) with the system
# python3, from the runfiles root so `tools.layering` is importable.
set -eu
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
PYTHONPATH=. exec python3 tests/layering/check_links_test.py
