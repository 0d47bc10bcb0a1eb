#!/usr/bin/env bash
# Runs the message-rate, latency and bandwidth programs on every system —
# this LCI, upstream LCI, Open MPI and MPICH, the same sources built for each
# (bench/build_programs.sh) — alternately for several rounds, and writes
# RESULTS_DIR/results.md (a table of medians), msgrate.png (rate against
# threads) and bandwidth.png (bandwidth against size), one line per system,
# with the data behind them (docs/bench_upstream.md).
# With --collectives it runs collective_latency instead (every collective
# by size, at each --ranks count) and writes RESULTS_DIR/collectives.md and
# collectives_<ranks>.png (docs/bench_collectives.md).
#
# usage: bench/run_all.sh --upstream BUILD | --without-upstream
#                         [--ours PREFIX] [--work DIR] [--out RESULTS_DIR]
#                         [--rounds N] [--threads LIST] [--pin]
#                         [--collectives [--ranks LIST] [--iterations N]]
#   --upstream BUILD      upstream LCI's CMake build directory (ofi backend;
#                         docs/bench_upstream.md, "Building upstream")
#   --without-upstream    leave upstream LCI out
#   --ours PREFIX         this LCI installed there; default: install it into
#                         the work directory first
#   --work DIR            where programs are built (default /tmp/lci_run_all)
#   --out RESULTS_DIR     default bench/results/<UTC date>
#   --rounds N            default 3
#   --threads LIST        threads per process for the rate (default 1,2)
#   --pin                 each rank on as many cores of its own as it has
#                         threads (bench/pin_rank.sh; not with --collectives)
#   --collectives         the collectives' latency against MPI's instead
#   --ranks LIST          --collectives: processes per run (default 2,4)
#   --iterations N        --collectives: timed calls per size below 64 KiB,
#                         a quarter of them from 64 KiB (default 20)
# All over shared memory, 2 processes: LCI over its native shared memory
# (LCI_ATTR_SHM_ENABLE=0 in the environment: over libfabric shm), MPI with its
# own shared-memory transport. Needs bazel, mpicxx.openmpi, mpicxx.mpich
# and gnuplot (tools/setup.sh installs them). About 3 minutes at 3 rounds
# (--collectives: about 2 minutes at 3 rounds, longer on a loaded machine).
# Exit status: 0, 1 when a build or run failed, 2 for a usage error or a
# missing prerequisite.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() { echo "run_all: $*" >&2; exit 2; }

command_line="bench/run_all.sh $*"
upstream=
without_upstream=
ours=
work=/tmp/lci_run_all
out=
rounds=3
threads=1,2
collectives=
ranks=2,4
iterations=20
pin=()
while [ $# -gt 0 ]; do
  case "$1" in
    --upstream) [ $# -ge 2 ] || usage; upstream=$2; shift 2 ;;
    --without-upstream) without_upstream=1; shift ;;
    --ours) [ $# -ge 2 ] || usage; ours=$2; shift 2 ;;
    --work) [ $# -ge 2 ] || usage; work=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
    --threads) [ $# -ge 2 ] || usage; threads=$2; shift 2 ;;
    --pin) pin=(--pin); shift ;;
    --collectives) collectives=1; shift ;;
    --ranks) [ $# -ge 2 ] || usage; ranks=$2; shift 2 ;;
    --iterations) [ $# -ge 2 ] || usage; iterations=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "run_all: unknown argument '$1'" >&2; usage ;;
  esac
done
if [ -z "$upstream" ] && [ -z "$without_upstream" ]; then
  die "give --upstream BUILD (upstream LCI's CMake build directory; docs/bench_upstream.md,
  \"Building upstream\") or --without-upstream"
fi
upstream_source=
if [ -n "$upstream" ]; then
  [ -f "$upstream/CMakeCache.txt" ] || die "--upstream $upstream: not a CMake build directory
  (no CMakeCache.txt); docs/bench_upstream.md, \"Building upstream\", says how to make one"
  upstream=$(cd "$upstream" && pwd)
  upstream_source=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$upstream/CMakeCache.txt")
  [ -x "$upstream_source/lcrun" ] || die "upstream's launcher $upstream_source/lcrun is missing"
fi
case "$rounds" in ''|*[!0-9]*|0) die "--rounds $rounds is not a positive count" ;; esac
case "$threads" in ''|*[!0-9,]*) die "--threads $threads is not a list like 1,2" ;; esac
case "$ranks" in ''|*[!0-9,]*) die "--ranks $ranks is not a list like 2,4" ;; esac
case "$iterations" in ''|*[!0-9]*|0) die "--iterations $iterations is not a positive count" ;; esac
for tool in bazel mpicxx.openmpi mpirun.openmpi mpicxx.mpich mpiexec.mpich gnuplot; do
  command -v "$tool" >/dev/null || die "$tool is missing: run tools/setup.sh"
done

root=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$out" ] || out=$root/bench/results/$(date -u +%Y-%m-%d)
mkdir -p "$work" "$out"
work=$(cd "$work" && pwd)
out=$(cd "$out" && pwd)
cd "$root"
if [ -z "$ours" ]; then
  ours=$work/prefix
  echo "run_all: installing this LCI (--config=ofi) into $ours" >&2
  bazel run --noshow_progress --config=ofi //:install -- --prefix "$ours" >&2 || exit 1
fi
systems=(--system "ours=$work/ours")
bench/build_programs.sh --out "$work/ours" --ours "$ours" || exit 1
if [ -n "$upstream" ]; then
  bench/build_programs.sh --out "$work/upstream" --upstream "$upstream" || exit 1
  systems+=(--system "upstream=$work/upstream")
fi
for mpi in openmpi mpich; do
  bench/build_programs.sh --out "$work/$mpi" --mpi "$mpi" || exit 1
  systems+=(--system "$mpi=$work/$mpi")
done

if [ -n "$collectives" ]; then
  exec python3 bench/bench_collectives.py --rounds "$rounds" --ranks "$ranks" \
    --iterations "$iterations" --out "$out" --lcirun "$ours/bin/lcirun" \
    --upstream-source "$upstream_source" --command "$command_line" "${systems[@]}"
fi
exec python3 bench/bench_systems.py all --rounds "$rounds" --threads "$threads" \
  --out "$out" --lcirun "$ours/bin/lcirun" --upstream-source "$upstream_source" \
  --command "$command_line" ${pin[@]+"${pin[@]}"} "${systems[@]}"
