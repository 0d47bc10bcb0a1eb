#!/usr/bin/env bash
# Builds upstream LCI's example and benchmark programs and its unit tests
# that use only LCI (not its LCT toolkit, its internals or GPUs), unchanged,
# against this project's install, runs each under the installed lcirun,
# and checks what they print. Upstream's source is read from a directory
# the caller gives; nothing of it is copied into this repository.
#
# The unit tests: tests/unit/collective/all.cpp as N processes, and the
# API-only headers of tests/unit/loopback (each rank talks to itself) as
# one, through a main of this script's that includes them as upstream's
# all.cpp does, with an lci_internal.hpp that is only lci.hpp (the headers
# it leaves out use upstream's internals: docs/api_compat.md). Every rank
# must report its gtest tests passed and none failed.
#
# usage: tools/upstream_programs.sh [--prefix DIR] [--ranks N]
#                                   [--provider P] UPSTREAM_SRC
#   UPSTREAM_SRC  a checkout of github.com/uiuc-hpc/lci (its examples/,
#                 benchmarks/ and tests/unit/), e.g. from `git archive` of a
#                 mirror.
#   --prefix DIR  an install of this project with libfabric
#                 (`bazel run --config=ofi //:install -- --prefix DIR`);
#                 default: installs into a temporary directory first.
#   --ranks N     processes per program (default 2). Upstream's programs
#                 assert their own limits: the pt2pt benchmarks want an
#                 even count (bench_put_lat exactly 2), distributed_array
#                 one that divides 1000 (at 3 it indexes rank 3).
#   --provider P  libfabric provider (default shm; shm jobs must not
#                 overlap other shm jobs on the machine).
# Needs g++ with OpenMP, pkg-config, cxxopts and GoogleTest (tools/setup.sh).
# The programs are built without NDEBUG: their own asserts check results
# too. Prints one PASS/FAIL line per run; exit status 1 if any failed.
set -uo pipefail

prefix="" ranks=2 provider=shm
while [ $# -gt 1 ]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --provider) provider=$2; shift 2 ;;
    *) echo "upstream_programs: unknown option $1" >&2; exit 2 ;;
  esac
done
[ $# -eq 1 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
src=$(cd "$1" && pwd) || exit 2
[ -f "$src/examples/hello_world.cpp" ] || {
  echo "upstream_programs: $src has no examples/hello_world.cpp (not an upstream LCI tree)" >&2
  exit 2
}
[ -f /usr/include/cxxopts.hpp ] || {
  echo "upstream_programs: cxxopts.hpp missing: run tools/setup.sh" >&2
  exit 2
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$prefix" ]; then
  prefix=$work/prefix
  bazel run --config=ofi //:install -- --prefix "$prefix" > "$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2
    exit 1
  }
fi
grep -q -- -lfabric "$prefix/lib/pkgconfig/liblci.pc" 2>/dev/null || {
  echo "upstream_programs: $prefix is not an install with libfabric (--config=ofi)" >&2
  exit 2
}
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
export LD_LIBRARY_PATH=$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LCI_ATTR_OFI_PROVIDER_NAME=$provider

failed=0
log=$work/log

# build NAME SOURCE [FLAGS...]: compiles SOURCE (upstream's, unchanged,
# relative to UPSTREAM_SRC; or an absolute path) into $work/NAME.
build() {
  local name=$1 source=$2
  shift 2
  [[ $source == /* ]] || source=$src/$source
  if g++ -std=c++17 -O2 -fopenmp "$source" "$@" $(pkg-config --cflags --libs liblci) \
    -o "$work/$name" > "$log" 2>&1; then
    return 0
  fi
  echo "FAIL build $2"
  sed 's/^/  | /' "$log"
  failed=1
  return 1
}

# lines REGEX: how many lines of the last run's output match REGEX.
lines() { grep -cE "$1" "$log" || true; }

# check NAME ARGS... -- CONDITION...: runs NAME under lcirun with ARGS, as
# $run_ranks processes (default: --ranks), then each CONDITION ("REGEX=COUNT"
# exact, "REGEX>=COUNT" at least) on its output.
check() {
  local name=$1 args=() ok=1 cond regex want got
  shift
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  timeout 300 "$prefix/bin/lcirun" -n "${run_ranks:-$ranks}" --timeout 240 "$work/$name" \
    "${args[@]}" > "$log" 2>&1 || ok=0
  for cond in "$@"; do
    if [[ $cond == *'>='* ]]; then
      regex=${cond%>=*} want=${cond##*>=}
      got=$(lines "$regex")
      [ "$got" -ge "$want" ] || ok=0
    else
      regex=${cond%=*} want=${cond##*=}
      got=$(lines "$regex")
      [ "$got" -eq "$want" ] || ok=0
    fi
  done
  if [ $ok = 1 ]; then
    echo "PASS $name ${args[*]}"
  else
    echo "FAIL $name ${args[*]}"
    sed 's/^/  | /' "$log" | tail -40
    failed=1
  fi
}

n=$ranks
last=$((n - 1))
number='[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?'
if build hello_world examples/hello_world.cpp; then
  check hello_world -- "^\[[0-9]+\] Hello world from rank [0-$last] of $n on .+\$=$n"
fi
if build hello_world_am examples/hello_world_am.cpp; then
  check hello_world_am -- \
    "^\[[0-9]+\] Rank [0-$last] received active message from rank 0\. Payload: Hello from rank 0\$=$n"
fi
if build distributed_array examples/distributed_array.cpp; then
  check distributed_array -- "Assertion|terminate|abort=0"
fi
if build nonblocking_barrier examples/nonblocking_barrier.cpp; then
  check nonblocking_barrier -- "rank [0-$last] start barrier\$=$((3 * n))" \
    "rank [0-$last] end barrier\$=$((3 * n))"
fi
if build bench_am_lat benchmarks/pt2pt/bench_am_lat.cpp; then
  for args in "" "-s 65536 -n 200" "-t 2 -n 200"; do
    # shellcheck disable=SC2086
    check bench_am_lat $args -- "^\[0\] Average round-trip latency: $number us\$=1"
  done
fi
if build bench_put_lat benchmarks/pt2pt/bench_put_lat.cpp; then
  for args in "" "-s 65536 -n 200"; do
    # shellcheck disable=SC2086
    check bench_put_lat $args -- "^\[0\] Average round-trip latency: $number us\$=1"
  done
fi
if build bench_put_bw benchmarks/pt2pt/bench_put_bw.cpp; then
  for args in "-N 4096" "-N 4096 -r" "-N 64 -s 65536"; do
    # shellcheck disable=SC2086
    check bench_put_bw $args -- "^\[0\] Elapsed time: $number seconds; Message rate: $number Mmsgs/sec=1"
  done
fi
if build bench_many2many_am benchmarks/bench_many2many_am.cpp; then
  for args in "" "-s 16384 -n 200" "-u -b"; do
    # shellcheck disable=SC2086
    check bench_many2many_am $args -- \
      "^\[0\] Total messages \(all ranks sent\): $((n * 1000))\$|^\[0\] Total messages \(all ranks sent\): $((n * 200))\$=1" \
      "^\[0\] Global message rate \(all ranks aggregated\): $number Mmsgs/s\$=1"
  done
fi

# Upstream's gtest suites: every rank passes at least one test, none fails.
passed_lines() { echo "^\[[0-9]+\] \[  PASSED  \] [1-9][0-9]* tests?\.\$=$1"; }
gtest_flags=(-I"$src/tests/unit/include" -lgtest -pthread)
if build unit_collective tests/unit/collective/all.cpp "${gtest_flags[@]}"; then
  check unit_collective -- "$(passed_lines "$n")" "\[  FAILED  \]=0"
fi
mkdir -p "$work/loopback"
echo '#include "lci.hpp"' > "$work/loopback/lci_internal.hpp"
{
  echo '#include <gtest/gtest.h>'
  for header in thread vector random iterator cstring lci.hpp util.hpp; do
    echo "#include <$header>"
  done
  for test in basic sync counter cq graph am sendrecv put putImm get matching_policy \
    rdv_protocol reg_cache; do
    echo "#include \"test_$test.hpp\""
  done
  echo 'int main(int argc, char** argv) {'
  echo '  testing::InitGoogleTest(&argc, argv);'
  echo '  return RUN_ALL_TESTS();'
  echo '}'
} > "$work/loopback/main.cpp"
if build unit_loopback "$work/loopback/main.cpp" -I"$work/loopback" \
  -I"$src/tests/unit/loopback" "${gtest_flags[@]}"; then
  run_ranks=1 check unit_loopback -- "$(passed_lines 1)" "\[  FAILED  \]=0"
fi
exit $failed
