#!/usr/bin/env bash
# Installs LCI under a prefix for CMake and pkg-config users:
#
#   bazel run //:install -- --prefix DIR            # simulated network only
#   bazel run --config=ofi //:install -- --prefix DIR  # libfabric compiled in
#
#   DIR/include/lci.hpp (+ the headers it includes), DIR/include/sim/sim_program.hpp,
#   DIR/include/lct.h
#   DIR/lib/liblci.{a,so}, DIR/lib/liblci_sim.{a,so}, DIR/lib/liblct.{a,so}
#   DIR/lib/pkgconfig/liblci.pc, liblci_sim.pc, liblct.pc
#   DIR/lib/cmake/LCI/LCIConfig.cmake, LCIConfigVersion.cmake
#     (LCI::lci and its alias LCI::LCI, LCI::sim, LCI::LCT)
#   DIR/bin/lcirun
#
# The files come from this binary's runfiles (tools/install/BUILD builds
# them); a relative DIR is taken from where `bazel run` was started.
set -euo pipefail

usage() {
  echo "usage: bazel run [--config=ofi] //:install -- --prefix DIR" >&2
  exit 2
}

prefix=
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || usage; prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    *) usage ;;
  esac
done
[ -n "$prefix" ] || usage
case $prefix in
  /*) ;;
  *) prefix=${BUILD_WORKING_DIRECTORY:-$PWD}/$prefix ;;
esac

# `bazel run` starts us with our own runfiles tree next to us; a test that
# has us as data starts us inside its tree (TEST_SRCDIR).
if [ -d "$0.runfiles/lci" ]; then
  runfiles=$0.runfiles/lci
elif [ -n "${RUNFILES_DIR:-}" ] && [ -d "$RUNFILES_DIR/lci" ]; then
  runfiles=$RUNFILES_DIR/lci
elif [ -n "${TEST_SRCDIR:-}" ] && [ -d "$TEST_SRCDIR/lci" ]; then
  runfiles=$TEST_SRCDIR/lci
else
  echo "install: cannot find the runfiles of $0" >&2
  exit 1
fi
here=$runfiles/tools/install

conf_value() { sed -n "s/^$1=//p" "$here/install.conf"; }
version=$(conf_value version)
network=$(conf_value network)

# One line of flags from a .linkopts file, for a .pc file or, each flag
# quoted, for CMake.
flags_pc() { tr '\n' ' ' < "$here/$1.linkopts" | sed 's/ $//'; }
flags_cmake() { sed 's/.*/"&"/' "$here/$1.linkopts" | tr '\n' ' ' | sed 's/ $//'; }

mkdir -p "$prefix"/{include,bin,lib/pkgconfig,lib/cmake/LCI}
prefix=$(cd "$prefix" && pwd)

for package in lct lci lci_sim; do
  while read -r source target; do
    install -D -m 644 "$runfiles/$source" "$prefix/include/$target"
  done < "$here/$package.headers"
  install -m 644 "$here/lib$package.a" "$prefix/lib/"
  install -m 755 "$here/lib$package.so" "$prefix/lib/"
done
install -m 755 "$runfiles/tools/lcirun" "$prefix/bin/lcirun"

# @NAME@ in a template -> its value. The values hold no '|'.
substitute() {
  sed -e "s|@PREFIX@|$prefix|g" \
      -e "s|@VERSION@|$version|g" \
      -e "s|@NETWORK@|$network|g" \
      -e "s|@LCI_LINKOPTS_PC@|$(flags_pc lci)|g" \
      -e "s|@LCT_LINKOPTS_PC@|$(flags_pc lct)|g" \
      -e "s|@LCI_SIM_LINKOPTS_PC@|$(flags_pc lci_sim)|g" \
      -e "s|@LCI_LINKOPTS_CMAKE@|$(flags_cmake lci)|g" \
      -e "s|@LCT_LINKOPTS_CMAKE@|$(flags_cmake lct)|g" \
      -e "s|@LCI_SIM_LINKOPTS_CMAKE@|$(flags_cmake lci_sim)|g" \
      "$here/$1" > "$2"
  chmod 644 "$2"
}
substitute liblci.pc.in "$prefix/lib/pkgconfig/liblci.pc"
substitute liblci_sim.pc.in "$prefix/lib/pkgconfig/liblci_sim.pc"
substitute liblct.pc.in "$prefix/lib/pkgconfig/liblct.pc"
substitute LCIConfig.cmake.in "$prefix/lib/cmake/LCI/LCIConfig.cmake"
substitute LCIConfigVersion.cmake.in "$prefix/lib/cmake/LCI/LCIConfigVersion.cmake"

echo "install: LCI $version (network: $network) installed under $prefix"
