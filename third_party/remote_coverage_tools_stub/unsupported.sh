#!/bin/sh
echo "bazel coverage is not supported in this offline workspace; use gcov by hand" >&2
exit 1
