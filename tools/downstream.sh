#!/usr/bin/env bash
# Builds a runtime that uses LCI 2 (a "downstream client") from its own
# source tree against an installed LCI, with the client's own CMake, and
# runs the client's own ctest suite under this project's tools/lcirun, as
# the client's users would (docs/downstream.md).
#
# usage: tools/downstream.sh --client lcw|reconverse --source DIR --prefix DIR
#          [--provider P]... [--repeat N] [--build DIR] [--jobs N]
#          [--timeout S] [-- CTEST_ARGS...]
#   --client    which client: the CMake options that build its LCI 2 backend
#               alone and point its test launcher at lcirun differ per client
#   --source    the client's source tree (a checkout of its repository)
#   --prefix    an LCI install: bazel run --config=ofi //:install -- --prefix DIR
#   --provider  a libfabric provider for the tests (LCI_ATTR_OFI_PROVIDER_NAME),
#               repeatable; the suite runs once per provider (default: shm)
#   --repeat    run the suite N times per provider, stopping at the first
#               failing run (ctest --repeat until-fail:N)
#   --build     the build directory (default: /tmp/downstream-<client>)
#   --timeout   ctest's per-test timeout in seconds (default: 120)
# Prints one line per provider, "downstream <client> <provider>: P of T
# passed", and exits non-zero when any test failed or the build did.
set -euo pipefail

client="" source="" prefix="" build="" repeat=1 jobs=2 timeout=120
providers=()
ctest_args=()

die() {
  echo "downstream: $*" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --client) client=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --provider) providers+=("$2"); shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --) shift; ctest_args=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[ -n "$client" ] || die "--client is required"
[ -d "$source" ] || die "--source '$source' is not a directory"
[ -d "$prefix" ] || die "--prefix '$prefix' is not a directory"
[ -x "$prefix/bin/lcirun" ] || die "no bin/lcirun under '$prefix': not an LCI install"
case "$repeat" in ''|*[!0-9]*|0) die "--repeat takes a positive count" ;; esac
[ "${#providers[@]}" -gt 0 ] || providers=(shm)
source=$(cd "$source" && pwd)
prefix=$(cd "$prefix" && pwd)
build=${build:-/tmp/downstream-$client}
launcher=$prefix/bin/lcirun

# Each client's switches: its LCI 2 backend only (no other network backend
# it could fall back to unseen), its tests started by lcirun.
case "$client" in
  lcw)
    options=(-DLCW_TRY_ENABLE_BACKEND_LCI2=ON -DLCW_TRY_ENABLE_BACKEND_LCI=OFF
      -DLCW_TRY_ENABLE_BACKEND_MPI=OFF -DLCW_TRY_ENABLE_BACKEND_GEX=OFF
      -DLCW_USE_CTEST_LAUNCHER="$launcher")
    ;;
  reconverse)
    options=(-DRECONVERSE_TRY_ENABLE_COMM_LCI2=ON -DRECONVERSE_AUTOFETCH_LCI2=OFF
      -DRECONVERSE_TRY_ENABLE_COMM_LCW=OFF -DRECONVERSE_AUTOFETCH_LCW=OFF
      -DRECONVERSE_TEST_LAUNCHER="$launcher")
    ;;
  *) die "unknown client '$client' (lcw or reconverse)" ;;
esac

mkdir -p "$build"
echo "== configure $client ($source) against $prefix in $build"
# LCI_DIR too: a build directory configured before keeps the LCI it found
# then in its cache, whatever the prefix says now.
cmake -S "$source" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DLCI_ROOT="$prefix" \
  -DLCI_DIR="$prefix/lib/cmake/LCI" -DCMAKE_PREFIX_PATH="$prefix" "${options[@]}" > "$build/configure.log" 2>&1 ||
  { cat "$build/configure.log" >&2; die "$client: cmake configure failed"; }
echo "== build"
cmake --build "$build" -j "$jobs" > "$build/build.log" 2>&1 ||
  { tail -n 60 "$build/build.log" >&2; die "$client: build failed (log: $build/build.log)"; }

status=0
for provider in "${providers[@]}"; do
  log="$build/ctest-${provider//[^A-Za-z0-9_]/_}.log"
  echo "== ctest over $provider (x$repeat)"
  set +e
  (cd "$build" && LCI_ATTR_OFI_PROVIDER_NAME="$provider" \
    ctest --output-on-failure --timeout "$timeout" --repeat "until-fail:$repeat" \
    "${ctest_args[@]}") > "$log" 2>&1
  rc=$?
  set -e
  # ctest's summary: "100% tests passed, 0 tests failed out of 8"
  summary=$(grep -E 'tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1)
  if [ -z "$summary" ]; then
    tail -n 40 "$log" >&2
    echo "downstream $client $provider: no ctest summary (log: $log)"
    status=1
    continue
  fi
  failed=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1/' <<< "$summary")
  total=$(sed -E 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\2/' <<< "$summary")
  if [ "$rc" -ne 0 ]; then
    grep -E '^\s+[0-9]+ - ' "$log" >&2 || true
    status=1
  fi
  echo "downstream $client $provider: $((total - failed)) of $total passed (log: $log)"
done
exit "$status"
