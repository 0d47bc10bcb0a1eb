#!/usr/bin/env bash
# tools/soak_sweep.sh: a few real runs of the soak pass; a program that
# fails is reported with its replay line and the exit status; the same
# --seed draws the same configurations.
set -uo pipefail
sweep=$1 soak=$2
tmp=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "soak_sweep_test: $*" >&2; exit 1; }

output=$("$sweep" --binary "$soak" --runs 2 --seed 7 --out "$tmp/real") ||
  fail "real soak runs failed: $output"
grep -q "soak_sweep: 2 runs, 0 failed" <<<"$output" || fail "unexpected summary: $output"

# A program that always fails, printing what it was given.
cat >"$tmp/failing" <<'PROGRAM'
#!/usr/bin/env bash
echo "failing: $*"
exit 1
PROGRAM
chmod +x "$tmp/failing"
for take in 1 2; do
  if output=$("$sweep" --binary "$tmp/failing" --runs 3 --seed 11 --out "$tmp/fake$take"); then
    fail "a failing program passed: $output"
  fi
  grep -q "soak_sweep: 3 runs, 3 failed" <<<"$output" || fail "unexpected summary: $output"
  [ "$(wc -l <"$tmp/fake$take/failures")" = 3 ] || fail "expected 3 replay lines"
  grep -q -- "--seed" "$tmp/fake$take/failure_1.log" || fail "the failure's output was not kept"
done
cmp -s "$tmp/fake1/failures" "$tmp/fake2/failures" || fail "the same --seed drew other runs"
echo "soak_sweep_test: ok"
