#!/usr/bin/env bash
# Runs the soak workload on the simulator over random configurations and
# seeds until a time budget is spent, and keeps every failing run's output
# with the command line that replays it. The soak's own tests run fixed
# seeds; a sweep explores the space around them (ranks, threads, shared or
# per-thread devices, provider profiles, fault mixes, concurrent mode), the
# way the receive-reserve deadlock was found (docs/design/device.md,
# "Receive reserve").
#
# usage: tools/soak_sweep.sh [--binary PATH] [--duration SECONDS | --runs N]
#                            [--seed S] [--out DIR]
#   --binary PATH   the soak program (default bazel-bin/tests/soak/soak:
#                   bazel build //tests/soak:soak first)
#   --duration S    stop starting runs after S seconds (default 600)
#   --runs N        stop after N runs instead
#   --seed S        the sweep's own random seed: the same S and binary draw
#                   the same configurations (default: the clock)
#   --out DIR       where failing runs' output goes (default: a new
#                   directory under /tmp); DIR/failures lists their replay lines
# Each run is deterministic but for concurrent mode (whose seed fixes the
# wire's picks, not the threads' interleaving). Prints one line per failure
# and "soak_sweep: N runs, F failed"; exit status 1 if any failed, 2 for a
# usage error.
set -uo pipefail

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

binary=bazel-bin/tests/soak/soak duration=600 runs_max=0 seed="" out=""
while [ $# -gt 0 ]; do
  case $1 in
    --binary) binary=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --runs) runs_max=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ -x "$binary" ] || { echo "soak_sweep: no program at $binary" >&2; exit 2; }
[ -n "$seed" ] || seed=$(date +%s)
[ -n "$out" ] || out=$(mktemp -d /tmp/soak_sweep.XXXXXX)
mkdir -p "$out"
: >"$out/failures"
RANDOM=$seed  # bash's generator: the sweep's draws follow from the seed

# The fault mixes, as environment assignments (sim/sim_faults.hpp's names).
mixes=(
  ""
  "LCI_SIM_FAULT_LOCK_BUSY=0.2"
  "LCI_SIM_FAULT_SEND_QUEUE_FULL=0.1 LCI_SIM_FAULT_NO_RECV_BUFFER=0.1"
  "LCI_SIM_FAULT_REORDER=0.3 LCI_SIM_FAULT_DELAY_SPIKE=0.05"
  "LCI_SIM_FAULT_CQ_PRESSURE=0.2 LCI_SIM_FAULT_REGISTRATION_FAILURE=0.1"
  "LCI_SIM_MODE=concurrent LCI_SIM_FAULT_PREEMPT=0.01"
)
profiles=(default shm tcp)

deadline=$(( $(date +%s) + duration ))
runs=0 failed=0
while true; do
  if [ "$runs_max" -gt 0 ]; then
    [ "$runs" -lt "$runs_max" ] || break
  else
    [ "$(date +%s)" -lt "$deadline" ] || break
  fi
  runs=$((runs + 1))
  run_seed=$(( RANDOM * 32768 + RANDOM ))
  devices=shared
  [ $((RANDOM % 2)) = 0 ] && devices=per-thread
  args=(--ranks $((2 + RANDOM % 4)) --threads $((1 + RANDOM % 4)) --devices "$devices"
        --ops 200 --epochs 2 --size-max 70000 --seed "$run_seed" --quiet)
  # shellcheck disable=SC2206  # a mix is words to split
  assignments=(LCI_SIM_PROFILE=${profiles[$((RANDOM % 3))]} ${mixes[$((RANDOM % ${#mixes[@]}))]})
  replay="${assignments[*]} $binary ${args[*]}"
  if ! timeout 300 env "${assignments[@]}" "$binary" "${args[@]}" >"$out/run.log" 2>&1; then
    failed=$((failed + 1))
    mv "$out/run.log" "$out/failure_$runs.log"
    echo "$replay" >>"$out/failures"
    echo "soak_sweep: run $runs failed ($out/failure_$runs.log): $replay"
  fi
done
rm -f "$out/run.log"
echo "soak_sweep: $runs runs, $failed failed (seed $seed, output in $out)"
[ "$failed" = 0 ]
