#!/usr/bin/env bash
# Checks what the examples' binaries link (examples/BUILD, example.bzl):
#   --real BINARY...  no simulator code at all: no symbol of lci::sim
#   --sim BINARY...   the simulator, asked for: symbols of lci::sim
# and, unless --sanitized (whose runtimes define pthread_create
# themselves), that no binary defines pthread_create: the interposition is
# //sim:thread_adopt, which neither the library nor the simulator brings.
#
# usage: link_test.sh [--sanitized] --real BINARY... --sim BINARY...
set -euo pipefail

check_pthread=1 kind="" failed=0
symbols() { nm -C --defined-only "$1"; }
for arg in "$@"; do
  case "$arg" in
    --sanitized) check_pthread=0; continue ;;
    --real|--sim) kind=${arg#--}; continue ;;
  esac
  [ -n "$kind" ] || { echo "usage: $0 [--sanitized] --real BINARY... --sim BINARY..." >&2; exit 2; }
  count=$(symbols "$arg" | grep -c ' lci::sim::' || true)
  if [ "$kind" = real ] && [ "$count" -ne 0 ]; then
    echo "FAIL: $arg links the simulator ($count symbols of lci::sim)" >&2
    failed=1
  elif [ "$kind" = sim ] && [ "$count" -eq 0 ]; then
    echo "FAIL: $arg does not link the simulator" >&2
    failed=1
  fi
  if [ "$check_pthread" = 1 ] && symbols "$arg" | grep -Eq ' [TW] pthread_create$'; then
    echo "FAIL: $arg defines pthread_create" >&2
    failed=1
  fi
done
[ "$failed" = 0 ] && echo "PASS"
exit "$failed"
