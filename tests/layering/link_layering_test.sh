#!/bin/sh
# Checks that every library of the repository links against its own
# dependencies alone (tools/layering/check_links.py).
# usage: link_layering_test.sh CHECKER FILE...   (the BUILD file's args)
set -eu
checker=$1
shift
exec python3 "$checker" "$@"
