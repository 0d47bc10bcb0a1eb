#!/usr/bin/env bash
# Runs a program and checks what it did: its exit status (0 unless --status
# says otherwise; examples and LCI programs verify their own results and exit
# non-zero on any wrong value) and that its output has lines matching each
# --expect pattern. Several runs, separated by --then, each with its own
# settings. Directly, or as N ranks of a job under tools/lcirun over one
# libfabric provider:
#
#   program_test.sh [--lcirun LCIRUN -n N --provider P [--timeout S] [--grace S]] \
#                   BINARY [--env NAME=VALUE]... [--arg ARG]... [--status CODE] \
#                   [--expect REGEX]... [--expect-lines REGEX COUNT]... [--then ...]
#
#   --lcirun ...    run every run as `LCIRUN -n N --timeout S [--grace S] BINARY
#                   ARGS` with LCI_ATTR_OFI_PROVIDER_NAME=P (default S: 120);
#                   lcirun prefixes each line a rank writes with "[<rank>] ":
#                   the patterns are matched against the lines without it
#   --env           set a variable for this run only (e.g. LCI_SIM_RANKS=4)
#   --arg           pass an argument to the program
#   --status        the exit status this run must end with (default 0)
#   --expect        an output line must match REGEX (grep -E)
#   --expect-lines  exactly COUNT output lines must match REGEX
#
# Variables given to the test (bazel test --test_env=LCI_SIM_SEED ...) reach
# every run unless a run sets them itself. Under lcirun, the variables of an
# enclosing launcher (LCIRUN_*, PMI_*, PMIX_*, LCI_BOOTSTRAP) and Bazel's
# per-test output files (XML_OUTPUT_FILE, TEST_PREMATURE_EXIT_FILE: every
# rank would write the same file) are removed, and the shm segments a
# killed rank left in /dev/shm (names "<pid>:...", the process gone) are
# removed after each run.
set -euo pipefail

lcirun="" ranks="" provider="" timeout_s=120 grace_s=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --lcirun) lcirun="$2"; shift 2 ;;
    -n) ranks="$2"; shift 2 ;;
    --provider) provider="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    --grace) grace_s="$2"; shift 2 ;;
    *) break ;;
  esac
done
if [ "$#" -lt 1 ] || { [ -n "$lcirun" ] && [ -z "$ranks" ]; }; then
  echo "usage: $0 [--lcirun LCIRUN -n N --provider P [--timeout S] [--grace S]] BINARY" \
    "[--env NAME=VALUE]... [--arg ARG]... [--status CODE] [--expect REGEX]..." >&2
  exit 2
fi
binary="$1"
shift

output_file="${TEST_TMPDIR:-/tmp}/program_output.$$"
lines_file="${TEST_TMPDIR:-/tmp}/program_lines.$$"
trap 'rm -f "$output_file" "$lines_file"' EXIT
run_index=0

launcher=()
if [ -n "$lcirun" ]; then
  launcher=(env -u LCI_BOOTSTRAP -u PMI_FD -u PMI_RANK -u PMI_SIZE -u PMI_ID -u PMI_PORT
    -u PMIX_RANK -u PMIX_NAMESPACE -u LCIRUN_ADDR -u LCIRUN_RANK -u LCIRUN_SIZE -u LCIRUN_JOB
    -u XML_OUTPUT_FILE -u GTEST_OUTPUT -u TEST_PREMATURE_EXIT_FILE
    "LCI_ATTR_OFI_PROVIDER_NAME=$provider"
    timeout "$((timeout_s + 10))" "$lcirun" -n "$ranks" --timeout "$timeout_s")
  if [ -n "$grace_s" ]; then launcher+=(--grace "$grace_s"); fi
fi

# Segments of processes that are gone (a killed rank skips shm's cleanup).
remove_stale_shm_segments() {
  local segment name pid
  for segment in /dev/shm/*; do
    name=$(basename "$segment")
    pid=${name%%:*}
    if [[ "$pid" =~ ^[0-9]+$ && "$name" == *:* ]] && ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$segment"
    fi
  done
}

# run ENVS ARGS EXPECTS EXPECT_LINES STATUS: the first four are
# newline-separated lists (a pattern cannot contain a newline, so none is lost).
run_once() {
  local envs="$1" args="$2" expects="$3" expect_lines="$4" want_status="$5"
  run_index=$((run_index + 1))
  local env_array=() arg_array=()
  if [ -n "$envs" ]; then mapfile -t env_array <<<"$envs"; fi
  if [ -n "$args" ]; then mapfile -t arg_array <<<"$args"; fi
  echo "=== run $run_index: ${env_array[*]:-} ${launcher[*]:-} $binary ${arg_array[*]:-}"
  local status=0
  env "${env_array[@]}" "${launcher[@]}" "$binary" "${arg_array[@]}" >"$output_file" 2>&1 ||
    status=$?
  cat "$output_file"
  if [ -n "$lcirun" ]; then
    remove_stale_shm_segments
    sed -E 's/^\[[0-9]+\] //' "$output_file" >"$lines_file"
  else
    cp "$output_file" "$lines_file"
  fi
  if [ "$status" -ne "$want_status" ]; then
    echo "FAIL (run $run_index): exit status $status, expected $want_status" >&2
    exit 1
  fi
  local pattern
  if [ -n "$expects" ]; then
    while IFS= read -r pattern; do
      if ! grep -Eq -- "$pattern" "$lines_file"; then
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
      count=$(grep -Ec -- "$pattern" "$lines_file" || true)
      if [ "$count" -ne "$want" ]; then
        echo "FAIL (run $run_index): $count output lines match '$pattern', expected $want" >&2
        exit 1
      fi
    done <<<"$expect_lines"
  fi
}

envs="" args="" expects="" expect_lines="" want_status=0
append() { if [ -z "$1" ]; then printf '%s' "$2"; else printf '%s\n%s' "$1" "$2"; fi; }
while [ "$#" -gt 0 ]; do
  case "$1" in
    --env) envs=$(append "$envs" "$2"); shift 2 ;;
    --arg) args=$(append "$args" "$2"); shift 2 ;;
    --status) want_status="$2"; shift 2 ;;
    --expect) expects=$(append "$expects" "$2"); shift 2 ;;
    --expect-lines) expect_lines=$(append "$expect_lines" "$2 $3"); shift 3 ;;
    --then)
      run_once "$envs" "$args" "$expects" "$expect_lines" "$want_status"
      envs="" args="" expects="" expect_lines="" want_status=0
      shift
      ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
done
run_once "$envs" "$args" "$expects" "$expect_lines" "$want_status"
echo "PASS: $run_index run(s)"
