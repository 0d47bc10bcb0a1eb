#!/bin/bash
# Measures LCI against the raw-libfabric baseline in one run: alternates
# the LCI benchmark and its raw twin (LCI, raw, LCI, raw, ...) for several
# rounds, each as 2 processes under tools/lcirun, and prints per message
# size the median and min-max of each and the ratio of the medians
# (LCI / raw). Alternating spreads the machine's drift over both.
#
# Interference from other work on the machine only slows a run down, so the
# ratio of the best runs (max/max) is printed too. The machine also drifts
# between a fast and a slow state for seconds at a time (both programs
# slow down together), which can put the medians of the two in different
# states: "paired" is the median of each round's own ratio (a LCI run over
# the raw run right after it), which such drift moves least.
#
# usage: ofi_compare.sh [--rounds N] [--ranks R] [--provider P] [--timeout S]
#                       [--lcirun PATH] [--bin-dir DIR] [--lci-bin NAME]
#                       [--lci-extra "OPTIONS"] [--base-bin NAME] msgrate|bandwidth
#                       [benchmark options...]
#   The benchmark options (ofi_msgrate --help) go to both binaries; --csv is
#   added. Defaults: 5 rounds, 2 ranks, provider shm, 120 s per run,
#   tools/lcirun and bazel-bin/bench (from the workspace root).
#   --lci-bin runs another binary of DIR in the LCI slot, --lci-extra adds
#   options to that slot only: the baseline against itself with added work,
#   --lci-bin ofi_raw_msgrate --lci-extra "--work-send 50" (docs/bench_ofi.md).
#   --base-bin runs another binary of DIR in the baseline slot. With
#   ofi_backend_msgrate (LCI's ofi backend, no runtime) in one slot or the
#   other, the ratio is what the backend or the runtime costs:
#   --lci-bin ofi_backend_msgrate (backend / raw), --base-bin
#   ofi_backend_msgrate (LCI / backend); docs/bench_ofi.md, "Layers".
#   bazel run --config=ofi //bench:ofi_compare -- msgrate --op am
# Prints each command before its rounds. Exit status: 0, 1 when a run
# failed (its output is shown), 2 for a usage error.
set -u

rounds=5
ranks=2
provider=shm
timeout_s=120
lcirun=tools/lcirun
bin_dir=bazel-bin/bench
lci_bin_override=
lci_extra=
base_bin_override=

usage() {
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --provider) provider=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --lcirun) lcirun=$2; shift 2 ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --lci-bin) lci_bin_override=$2; shift 2 ;;
    --lci-extra) lci_extra=$2; shift 2 ;;
    --base-bin) base_bin_override=$2; shift 2 ;;
    -h|--help) usage ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || usage
bench=$1
shift
case "$bench" in
  msgrate) lci_bin=ofi_msgrate; raw_bin=ofi_raw_msgrate
    # CSV: impl,msgrate,op,devices,threads,size,window,rounds,rank,msgs_per_s
    filter='$9 == "total" { print $6, $10 }' ; unit="msgs/s" ;;
  bandwidth) lci_bin=ofi_bandwidth; raw_bin=ofi_raw_bandwidth
    # CSV: impl,bandwidth,op,devices,threads,window,size,rounds,bytes_per_s,msgs_per_s
    filter='$2 == "bandwidth" { print $7, $9 }' ; unit="bytes/s" ;;
  *) echo "ofi_compare: '$bench' is not msgrate or bandwidth" >&2; usage ;;
esac
[ -z "$lci_bin_override" ] || lci_bin=$lci_bin_override
[ -z "$base_bin_override" ] || raw_bin=$base_bin_override
case "$rounds" in ''|*[!0-9]*|0) echo "ofi_compare: --rounds $rounds is not a positive count" >&2; exit 2 ;; esac
for binary in "$bin_dir/$lci_bin" "$bin_dir/$raw_bin" "$lcirun"; do
  if [ ! -x "$binary" ]; then
    echo "ofi_compare: $binary is missing: bazel build --config=ofi //bench:all //tools:lcirun" >&2
    exit 2
  fi
done

samples=$(mktemp)
output=$(mktemp)
trap 'rm -f "$samples" "$output"' EXIT

# run <impl> <binary>: one run; appends "<impl> <size> <value>" lines.
run() {
  local impl=$1 binary=$2
  shift 2
  if ! LCI_ATTR_OFI_PROVIDER_NAME="$provider" timeout "$((timeout_s + 10))" \
      "$lcirun" -n "$ranks" --timeout "$timeout_s" "$binary" "$@" --csv >"$output" 2>&1; then
    echo "ofi_compare: this run failed:" >&2
    cat "$output" >&2
    exit 1
  fi
  sed 's/^\[[0-9]*\] //' "$output" | awk -F, "$filter" | sed "s/^/$impl /" >>"$samples"
}

echo "LCI_ATTR_OFI_PROVIDER_NAME=$provider $lcirun -n $ranks $bin_dir/$lci_bin $* $lci_extra --csv"
echo "LCI_ATTR_OFI_PROVIDER_NAME=$provider $lcirun -n $ranks $bin_dir/$raw_bin $* --csv"
echo "rounds: $rounds, alternating (lci, raw); $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
for ((round = 0; round < rounds; round++)); do
  # $lci_extra unquoted: split into its options.
  # shellcheck disable=SC2086
  run lci "$bin_dir/$lci_bin" "$@" $lci_extra
  run raw "$bin_dir/$raw_bin" "$@"
done

# Per size: median and range of each implementation, and the ratio.
printf '%9s %14s %25s %14s %25s %7s %7s %7s\n' size "lci $unit" "lci min-max" "raw $unit" \
  "raw min-max" "lci/raw" "max/max" "paired"
awk '
  {
    values[$1 " " $2] = values[$1 " " $2] " " $3; sizes[$2] = 1
    # Rounds run lci then raw: the k-th raw sample of a size pairs with its
    # k-th lci sample.
    if ($1 == "lci") lci_seq[$2, ++lci_n[$2]] = $3
    else if ($3 > 0 && raw_n[$2] < lci_n[$2]) {
      k = ++raw_n[$2]; ratios[$2] = ratios[$2] " " lci_seq[$2, k] / $3
    }
  }
  function median(list,   n, v, i, j, t) {
    n = split(list, v, " ")
    for (i = 2; i <= n; ++i) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; --j) {
      t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
    }
    low = v[1]; high = v[n]
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  END {
    for (size in sizes) order[++count] = size + 0
    for (i = 2; i <= count; ++i) for (j = i; j > 1 && order[j - 1] > order[j]; --j) {
      t = order[j]; order[j] = order[j - 1]; order[j - 1] = t
    }
    for (i = 1; i <= count; ++i) {
      size = order[i]
      lci = median(values["lci " size]); lci_range = sprintf("%.0f-%.0f", low, high)
      lci_max = high
      raw = median(values["raw " size]); raw_range = sprintf("%.0f-%.0f", low, high)
      raw_max = high
      paired = ratios[size] == "" ? 0 : median(ratios[size])
      printf "%9d %14.0f %25s %14.0f %25s %7.3f %7.3f %7.3f\n", size, lci, lci_range, raw,
             raw_range, (raw > 0 ? lci / raw : 0), (raw_max > 0 ? lci_max / raw_max : 0), paired
    }
  }' "$samples"
