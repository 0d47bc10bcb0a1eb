#!/usr/bin/env bash
# Installs LCI with //:install into a temporary prefix, builds hello.cpp and
# plain.cpp with a CMake project (find_package(LCI), shared and static) and
# a Makefile project (pkg-config), and runs what was built:
#   hello  (LCI::sim / liblci_sim): 2 ranks on the simulated network, then 3
#   plain  (LCI::lci / liblci):     without a real network, fails saying so;
#   hpx_patterns (LCI::sim, LCI::LCI, LCI::LCT): HPX's usage of LCI, 2 ranks;
#   tools  (LCI::LCI + LCI::LCT / liblci + liblct): LCT's functions, checked;
#   tools_c (liblct, from the Makefile only): lct.h from strict C99;
# and when the installed LCI has libfabric (bazel test --config=ofi), each
# also as 2 processes under the installed bin/lcirun, and plain alone as
# one rank.
#
# usage: install_test.sh INSTALL CONF SOURCES   (the BUILD file's args)
set -euo pipefail

install_bin=$1 conf=$2 sources=$(cd "$(dirname "$3")" && pwd)
network=$(sed -n 's/^network=//p' "$conf")
work=${TEST_TMPDIR:-$(mktemp -d)}
prefix=$work/prefix
log=$work/log

fail() {
  echo "FAIL: $*" >&2
  if [ -f "$log" ]; then sed 's/^/  | /' "$log" >&2; fi
  exit 1
}

# run NAME CMD...: runs CMD with its output in $log; fails the test if it fails.
run() {
  local name=$1
  shift
  "$@" > "$log" 2>&1 || fail "$name: exit $? from: $*"
}

# expect_lines REGEX COUNT: exactly COUNT lines of $log match REGEX.
expect_lines() {
  local count
  count=$(grep -cE "$1" "$log" || true)
  [ "$count" -eq "$2" ] || fail "expected $2 lines matching '$1', got $count"
}

# check_hello BINARY: the ranks of the simulated network, 2 then 3.
check_hello() {
  run "$1" timeout 60 "$1"
  expect_lines '^rank [01] of 2$' 2
  run "$1" env LCI_SIM_RANKS=3 timeout 60 "$1"
  expect_lines '^rank [0-2] of 3$' 3
}

# check_plain BINARY: upstream style, its own main(): a real network or none.
check_plain() {
  if [ "$network" = ofi ]; then
    run "$1" timeout 60 "$1"
    expect_lines '^rank 0 of 1$' 1
  else
    if timeout 60 "$1" > "$log" 2>&1; then fail "$1 ran without a network"; fi
    expect_lines '^plain: lci: no network for this process' 1
  fi
}

# check_launched BINARY: 2 processes over tcp under the installed lcirun
# (tcp, not shm: shm jobs must not overlap, see tools/real_network.bzl).
check_launched() {
  [ "$network" = ofi ] || return 0
  run "$1" env LCI_ATTR_OFI_PROVIDER_NAME='tcp;ofi_rxm' \
    "$prefix/bin/lcirun" -n 2 --timeout 60 "$1"
  expect_lines '^\[[01]\] rank [01] of 2$' 2
}

# check_tools BINARY: LCT beside LCI (tools.cpp checks the results).
check_tools() {
  run "$1" timeout 60 "$1" --iterations 7 --kind=faa
  expect_lines '^tools: ok$' 1
  expect_lines 'filtered out' 0
}

# check_hpx BINARY: HPX's usage patterns, 2 simulated ranks.
check_hpx() {
  run "$1" timeout 120 "$1"
  expect_lines '^hpx_patterns: ok$' 1
}

check_all() {
  check_tools "$1/tools"
  check_hpx "$1/hpx_patterns"
  check_hello "$1/hello"
  check_plain "$1/plain"
  check_launched "$1/hello"
  check_launched "$1/plain"
}

run install "$install_bin" --prefix "$prefix"
grep -q "(network: $network)" "$log" || fail "install did not report network $network"

# The CMake package, shared then static libraries.
for variant in shared static; do
  static=OFF
  if [ $variant = static ]; then static=ON; fi
  run "cmake ($variant)" cmake -S "$sources/cmake_project" -B "$work/cmake_$variant" \
    -DCMAKE_PREFIX_PATH="$prefix" -DLCI_USE_STATIC_LIBS=$static -DLCI_TEST_SOURCES="$sources"
  run "cmake --build ($variant)" cmake --build "$work/cmake_$variant" -- -j2
  check_all "$work/cmake_$variant"
done
# Shared means shared: the programs need liblci.so at run time. (Output goes
# to $log before grep: with pipefail, `ldd | grep -q` fails at random when
# grep exits at its first match and ldd dies of SIGPIPE writing the rest;
# and fail() then shows what was searched.)
ldd "$work/cmake_shared/hello" > "$log"
grep -q "$prefix/lib/liblci.so" "$log" ||
  fail "cmake_shared/hello does not load the installed liblci.so"
ldd "$work/cmake_shared/tools" > "$log"
grep -q "$prefix/lib/liblct.so" "$log" ||
  fail "cmake_shared/tools does not load the installed liblct.so"
for program in hello tools; do
  ldd "$work/cmake_static/$program" > "$log"
  if grep -qE "liblci|liblct" "$log"; then
    fail "cmake_static/$program loads a shared liblci or liblct"
  fi
done

# The pkg-config files, from a Makefile.
mkdir -p "$work/make"
run "make" env PKG_CONFIG_PATH="$prefix/lib/pkgconfig" \
  make -C "$work/make" -f "$sources/make_project/Makefile" SOURCES="$sources" -j2
check_all "$work/make"
run "$work/make/tools_c" timeout 60 "$work/make/tools_c"
expect_lines '^tools_c: ok$' 1
if [ "$network" = ofi ]; then
  PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --static --libs liblci > "$log"
  grep -q -- -lfabric "$log" ||
    fail "liblci.pc does not list -lfabric for static links"
fi

echo "PASS: LCI installed ($network), built with CMake and pkg-config, programs ran"
