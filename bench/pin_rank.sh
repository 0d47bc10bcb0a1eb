#!/usr/bin/env bash
# Runs one rank of a benchmark on cores of its own: pin_rank.sh CORES PROGRAM [ARGS...]
#
# The ranks of one run share a file, $LCI_BENCH_PIN_FILE (bench_systems.py
# makes a fresh one per run); each rank appends a line to it under flock, and
# the number of lines before its own is its slot. Slot s gets cores
# [s*CORES, s*CORES + CORES) modulo the machine's cores, so two 1-thread
# ranks on two cores run on one core each. No rank number is needed: none
# of the launchers (tools/lcirun, upstream's lcrun, mpirun, mpiexec) has to
# say which rank a process is, and the slot order does not matter, only
# that no two ranks share a core while cores are left.
#
# Why: unpinned, two spinning ranks on a 2-core machine are moved between
# cores and share one at times, and the 1-thread rates fall into two modes
# 2-3x apart (docs/bench_upstream.md); pinned, a run measures the library.
set -euo pipefail

die() { echo "pin_rank: $*" >&2; exit 2; }
[ $# -ge 2 ] || die "usage: pin_rank.sh CORES PROGRAM [ARGS...]"
cores=$1
shift
case "$cores" in ''|*[!0-9]*|0) die "CORES '$cores' is not a positive count" ;; esac
[ -n "${LCI_BENCH_PIN_FILE:-}" ] || die "LCI_BENCH_PIN_FILE is not set"

exec 9>>"$LCI_BENCH_PIN_FILE"
flock 9
slot=$(wc -l < "$LCI_BENCH_PIN_FILE")
echo "$$" >&9
flock -u 9
exec 9>&-

# The machine's online cores, not nproc's: nproc counts the cores this
# process may use, and a launcher that binds its ranks itself (mpirun.openmpi
# binds each to one core) made that 1, so every rank got core 0.
machine=$(getconf _NPROCESSORS_ONLN)
list=
for ((i = 0; i < cores && i < machine; ++i)); do
  list+="${list:+,}$(( (slot * cores + i) % machine ))"
done
exec taskset -c "$list" "$@"
