#!/usr/bin/env bash
# Runs an example program and checks what it did: its exit status must be 0
# (every example verifies its own results and returns non-zero on any wrong
# value), and its output must contain one line matching each --expect
# pattern. Several runs, separated by --then, each with its own settings:
#
#   example_test.sh BINARY [--env NAME=VALUE]... [--arg ARG]... \
#                          [--expect REGEX]... [--expect-lines REGEX COUNT]... \
#                          [--then [--env ...] ...]
#
#   --env           set a variable for this run only (e.g. LCI_SIM_RANKS=4)
#   --arg           pass an argument to the program
#   --expect        an output line must match REGEX (grep -E)
#   --expect-lines  exactly COUNT output lines must match REGEX
#
# Variables given to the test (bazel test --test_env=LCI_SIM_SEED ...) reach
# every run unless a run sets them itself.
set -euo pipefail

if [ "$#" -lt 1 ]; then
  echo "usage: $0 BINARY [--env NAME=VALUE]... [--arg ARG]... [--expect REGEX]..." >&2
  exit 2
fi
binary="$1"
shift

output_file="${TEST_TMPDIR:-/tmp}/example_output.$$"
trap 'rm -f "$output_file"' EXIT
run_index=0

# run ENVS ARGS EXPECTS EXPECT_LINES: the four are newline-separated lists
# (a pattern cannot contain a newline, so none is lost).
run_once() {
  local envs="$1" args="$2" expects="$3" expect_lines="$4"
  run_index=$((run_index + 1))
  local env_array=() arg_array=()
  if [ -n "$envs" ]; then mapfile -t env_array <<<"$envs"; fi
  if [ -n "$args" ]; then mapfile -t arg_array <<<"$args"; fi
  echo "=== run $run_index: ${env_array[*]:-} $binary ${arg_array[*]:-}"
  local status=0
  env "${env_array[@]}" "$binary" "${arg_array[@]}" >"$output_file" 2>&1 || status=$?
  cat "$output_file"
  if [ "$status" -ne 0 ]; then
    echo "FAIL (run $run_index): exit status $status, expected 0" >&2
    exit 1
  fi
  local pattern
  if [ -n "$expects" ]; then
    while IFS= read -r pattern; do
      if ! grep -Eq -- "$pattern" "$output_file"; then
        echo "FAIL (run $run_index): no output line matches: $pattern" >&2
        exit 1
      fi
    done <<<"$expects"
  fi
  if [ -n "$expect_lines" ]; then
    local line count want
    while IFS= read -r line; do
      pattern="${line% *}"
      want="${line##* }"
      count=$(grep -Ec -- "$pattern" "$output_file" || true)
      if [ "$count" -ne "$want" ]; then
        echo "FAIL (run $run_index): $count output lines match '$pattern', expected $want" >&2
        exit 1
      fi
    done <<<"$expect_lines"
  fi
}

envs="" args="" expects="" expect_lines=""
append() { if [ -z "$1" ]; then printf '%s' "$2"; else printf '%s\n%s' "$1" "$2"; fi; }
while [ "$#" -gt 0 ]; do
  case "$1" in
    --env) envs=$(append "$envs" "$2"); shift 2 ;;
    --arg) args=$(append "$args" "$2"); shift 2 ;;
    --expect) expects=$(append "$expects" "$2"); shift 2 ;;
    --expect-lines) expect_lines=$(append "$expect_lines" "$2 $3"); shift 3 ;;
    --then)
      run_once "$envs" "$args" "$expects" "$expect_lines"
      envs="" args="" expects="" expect_lines=""
      shift
      ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
run_once "$envs" "$args" "$expects" "$expect_lines"
echo "PASS: $run_index run(s)"
