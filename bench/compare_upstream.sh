#!/usr/bin/env bash
# Compares this LCI with upstream LCI 2.x in one run: the same benchmark
# programs (written against the public API only: bench/build_programs.sh)
# built against both libraries, run alternately (ours, upstream, ours, ...)
# for several rounds, and for every target the ratio ours/upstream of each
# round: min, median, max (docs/bench_upstream.md).
#
# usage: bench/compare_upstream.sh --upstream BUILD [--ours PREFIX] [--work DIR]
#                                  [--rounds N] [--quick] [--target R]
#                                  [--threads LIST] [--no-pin]
#   --upstream BUILD  upstream LCI's CMake build directory, built with the
#                     ofi backend (docs/bench_upstream.md, "Building upstream")
#   --ours PREFIX     this LCI already installed there (bazel run --config=ofi
#                     //:install -- --prefix PREFIX); default: install it into
#                     the work directory first
#   --work DIR        where programs are built (default /tmp/lci_compare_upstream)
#   --rounds N        rounds (default 5); --quick: 2 rounds, shorter runs
#   --target R        judge every ratio against R (at most 1/R for latency)
#                     instead of each target's own goal (below)
#   --threads LIST    thread counts of the message-rate targets (default 1,2;
#                     e.g. 1,2,4,8 on a machine with cores for 2 x 8 threads)
#   --no-pin          let the scheduler place the ranks and threads; by default
#                     each rank runs on as many cores of its own as it has
#                     threads (bench/pin_rank.sh), wrapping around when there
#                     are fewer, and each api_resources and bench/resources
#                     thread on a core of its own (--pin; upstream's
#                     lci_bench_* programs pin theirs either way)
# Targets and their goals (ours/upstream, paired median), over libfabric
# shm, 2 processes: 8-byte AM and send/recv rates at 1 and 2 threads with
# shared and dedicated devices (>= 1.1); AM round-trip latency (<= 1.0);
# bandwidth 4 KiB..1 MiB (>= 1.0); resources through the API
# (bench/api_resources.cpp) at 1 and 2 threads, and bench/resources against
# upstream's lci_bench_cq, lci_bench_matching_engine and
# lci_bench_packet_pool (>= 1.5); 8-byte AMs of both against raw libfabric
# (bench/ofi_raw_msgrate; ours >= 0.85). Run from anywhere; needs
# bazel (tools/setup.sh). Takes about 5 minutes at 5 rounds. Performance is
# only ever the ratio within one run: the machine drifts up to 2x.
# Exit status: 0, 1 when a build or run failed, 2 for a usage error or a
# missing prerequisite.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
die() { echo "compare_upstream: $*" >&2; exit 2; }

upstream=
ours=
work=/tmp/lci_compare_upstream
rounds=5
extra=()
pin=(--pin)
while [ $# -gt 0 ]; do
  case "$1" in
    --upstream) [ $# -ge 2 ] || usage; upstream=$2; shift 2 ;;
    --ours) [ $# -ge 2 ] || usage; ours=$2; shift 2 ;;
    --work) [ $# -ge 2 ] || usage; work=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
    --target) [ $# -ge 2 ] || usage; extra+=(--target "$2"); shift 2 ;;
    --threads) [ $# -ge 2 ] || usage; extra+=(--threads "$2"); shift 2 ;;
    --no-pin) pin=(); shift ;;
    --quick) rounds=2; extra+=(--duration 0.15 --bandwidth-duration 0.05 --resource-ops 300000)
      shift ;;
    -h|--help) usage ;;
    *) echo "compare_upstream: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$upstream" ] || die "--upstream BUILD is required: the CMake build directory of upstream LCI
  (docs/bench_upstream.md, \"Building upstream\")"
[ -f "$upstream/CMakeCache.txt" ] || die "--upstream $upstream: not a CMake build directory
  (no CMakeCache.txt); docs/bench_upstream.md, \"Building upstream\", says how to make one"
grep -q '^LCI_NETWORK_BACKENDS:STRING=.*ofi' "$upstream/CMakeCache.txt" ||
  die "--upstream $upstream: built without the ofi backend; configure it with -DLCI_NETWORK_BACKENDS=ofi"
upstream=$(cd "$upstream" && pwd)
upstream_source=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$upstream/CMakeCache.txt")
[ -x "$upstream_source/lcrun" ] || die "upstream's launcher $upstream_source/lcrun is missing"
case "$rounds" in ''|*[!0-9]*|0) die "--rounds $rounds is not a positive count" ;; esac

root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
cd "$root"
command -v bazel >/dev/null || die "bazel is missing: run tools/setup.sh"
if [ -z "$ours" ]; then
  ours=$work/prefix
  echo "compare_upstream: installing this LCI (--config=ofi) into $ours" >&2
  bazel run --noshow_progress --config=ofi //:install -- --prefix "$ours" >&2 || exit 1
fi
# The raw baseline and bench/resources come from Bazel; both configurations
# write bazel-bin, so each is copied as soon as it is built.
mkdir -p "$work/bazel"
bazel build --noshow_progress --config=ofi //bench:ofi_raw_msgrate >&2 || exit 1
cp -f bazel-bin/bench/ofi_raw_msgrate "$work/bazel/"
bazel build --noshow_progress //bench:resources >&2 || exit 1
cp -f bazel-bin/bench/resources "$work/bazel/"
bench/build_programs.sh --out "$work/ours" --ours "$ours" || exit 1
bench/build_programs.sh --out "$work/upstream" --upstream "$upstream" || exit 1

exec python3 bench/bench_systems.py compare --rounds "$rounds" \
  --ours "$work/ours" --upstream "$work/upstream" --upstream-build "$upstream" \
  --upstream-source "$upstream_source" --lcirun "$ours/bin/lcirun" \
  --raw-bin "$work/bazel/ofi_raw_msgrate" --resources-bin "$work/bazel/resources" \
  ${pin[@]+"${pin[@]}"} ${extra[@]+"${extra[@]}"}
