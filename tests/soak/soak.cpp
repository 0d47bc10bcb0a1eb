// soak: the LCI soak workload as a program — active messages, send/recv,
// put and get with and without signals, 0 B to 1 MiB, self-sends, hundreds
// of operations in flight per thread, every completion kind, all at once;
// every message checked (status, bytes derived from source, target, thread
// and sequence, exactly once) and the ranks' accounting compared at every
// epoch's end. Options: soak_options.hpp; what one rank does:
// soak_workload.hpp; what is checked: soak_checker.hpp.
//
// On the simulator (ranks as fibers of one seeded scheduler; one seed is
// one execution):
//   bazel run //tests/soak:soak -- --ranks 3 --threads 2 --ops 300 --size-max 4000
//   bazel run //tests/soak:soak -- --ranks 4 --threads 4 --devices per-thread --seed 7
//   LCI_SIM_FAULT_LOCK_BUSY=0.2 bazel run //tests/soak:soak -- --seed 3
//   LCI_SIM_MODE=concurrent bazel run //tests/soak:soak -- --threads 3
//   bazel run //tests/soak:soak -- --exhaust --window 64
// Random configurations and seeds for a while (docs/verification.md):
//   bazel build //tests/soak:soak && tools/soak_sweep.sh --duration 900
// As real processes over libfabric:
//   bazel build --config=ofi //tests/soak:soak
//   LCI_ATTR_OFI_PROVIDER_NAME=shm tools/lcirun -n 2 bazel-bin/tests/soak/soak --threads 4
//   LCI_ATTR_OFI_PROVIDER_NAME='tcp;ofi_rxm' tools/lcirun -n 4 bazel-bin/tests/soak/soak
//   LCI_ATTR_OFI_PROVIDER_NAME=shm tools/lcirun -n 4 --timeout 900
//       bazel-bin/tests/soak/soak --threads 4 --duration 600      (one line; before a release)
// Output: "soak: <N> ranks, <options>" (rank 0), a line per epoch (rank 0),
// and "soak: rank <r> ok: <counts>" from every rank; exit status 0 only if
// every check passed on every rank. A failure prints the failed checks and
// the seed that replays it (simulator: the sim's replay line too).
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "sim/sim_harness.hpp"
#include "sim/sim_process.hpp"
#include "sim/sim_program.hpp"
#include "tests/soak/soak_options.hpp"
#include "tests/soak/soak_workload.hpp"

namespace {

bool parse(int argc, char** argv, lci::soak::soak_options_t* options) {
  *options = lci::soak::default_soak_options();
  std::string error;
  if (lci::soak::parse_soak_options(argc, argv, options, &error)) return true;
  std::fprintf(stderr, "%s", error.c_str());
  return false;
}

int rank_main(int argc, char** argv) {
  lci::soak::soak_options_t options;
  if (!parse(argc, argv, &options)) return 2;
  const lci::soak::soak_result_t result = lci::soak::run_soak_rank(options);
  if (!result.crash_seen && result.in_flight_max < options.expect_in_flight) {
    std::printf("soak: rank %d FAILED: at most %d ops were in flight per thread, expected %d "
                "(--expect-in-flight): %s\n",
                result.rank, result.in_flight_max, options.expect_in_flight,
                result.describe().c_str());
    std::fflush(stdout);
    return 1;
  }
  const char* crash = result.crash_seen ? " (stopped: a peer crashed)" : "";
  std::printf("soak: rank %d ok%s: %s\n", result.rank, crash, result.describe().c_str());
  std::fflush(stdout);
  return 0;
}

// With crashes on the simulator, survivors leave operations between them
// unfinished (soak_workload.hpp, "Crashes"): run_program's leftover check
// would fail such a run, so it runs through run_ranks without it.
int run_crashing(int argc, char** argv, const lci::soak::soak_options_t& options) {
  const char* mode = std::getenv("LCI_SIM_MODE");
  const bool concurrent = mode != nullptr && std::string(mode) == "concurrent";
  lci::sim::run_options_t run = lci::sim::default_run_options(
      options.seed,
      concurrent ? lci::sim::world_mode_t::concurrent : lci::sim::world_mode_t::deterministic);
  run.check_leftovers = false;
  run.log = false;
  const char* ranks_env = std::getenv("LCI_SIM_RANKS");  // main() set it from --ranks
  const int ranks = ranks_env != nullptr ? std::atoi(ranks_env) : 2;
  const lci::sim::run_report_t report =
      lci::sim::run_ranks(ranks, run,
                          [argc, argv](lci::sim::rank_env_t&) {
                            if (rank_main(argc, argv) != 0) throw std::runtime_error("rank failed");
                          });
  if (report.ok) return 0;
  std::fprintf(stderr, "%s", report.report.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  lci::soak::soak_options_t options;
  if (!parse(argc, argv, &options)) return 2;
  if (!lci::sim::process_mode()) {
    // Before any thread starts: the simulator reads these.
    if (options.ranks > 0) setenv("LCI_SIM_RANKS", std::to_string(options.ranks).c_str(), 1);
    setenv("LCI_SIM_SEED", std::to_string(options.seed).c_str(), 1);
    if (options.tolerate_crashes) return run_crashing(argc, argv, options);
  }
  return lci::sim::run_program(argc, argv, /*ranks_default=*/2, rank_main);
}
