#!/bin/sh
# Checks the includes of the runtime, backends and simulator against the
# layer order (tools/layering/check_layers.py).
# usage: layering_test.sh CHECKER FILE...   (the BUILD file's args)
set -eu
checker=$1
shift
exec python3 "$checker" "$@"
