#!/usr/bin/env bash
# Installs every Debian package the project needs. Idempotent and quiet:
# packages already present are skipped, so a rerun costs one dpkg query.
#
# Usage: tools/setup.sh            (as root, or with sudo available)
set -euo pipefail

packages=(
  # build
  bazel-bootstrap bazel-rules-java bazel-skylib
  g++ clang-16 libclang-rt-16-dev python3
  # sanitizer reports with file:line (the path .bazelrc gives them)
  llvm-16
  # tests, property tests, model checking
  libgtest-dev libgmock-dev librapidcheck-dev relacy-dev
  # simulator fibers
  libboost-context-dev
  # tests/install: CMake and pkg-config projects built against //:install
  cmake make pkg-config
  # optional networks and bootstrap (--config=ofi|ibv|pmix)
  libfabric-dev libfabric-bin libibverbs-dev ibverbs-utils
  libpmix-dev libpmix-bin
  # launchers and MPI peers for benchmarks
  openmpi-bin libopenmpi-dev mpich libmpich-dev
  # upstream LCI beside ours: its benchmarks run unchanged against this
  # project (tools/upstream_programs.sh), and bench/compare_upstream.sh builds
  # upstream for measurement (cmake above); bench/run_all.sh's plots
  libcxxopts-dev gnuplot-nox
  # a private one-node Slurm for the srun launch tests (tools/slurm_local.sh)
  slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi

echo "setup.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
