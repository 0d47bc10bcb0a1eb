// run_program(): the main() of an LCI program that runs on the simulated
// network when started directly (`bazel run //examples:hello_world`): the
// rank function runs as N ranks of one in-process world. Started by a
// launcher in a build with a real network (process mode, sim_process.hpp:
// `bazel build --config=ofi //examples:hello_world && tools/lcirun -n 2
// bazel-bin/examples/hello_world`), this process is one rank: run_program
// calls rank_main once and returns what it returned (1, with the message,
// if it threw); the runtime finds the network through lci's process host
// (lci/runtime/process_host.hpp).
//
//   int rank_main(int argc, char** argv) { lci::g_runtime_init(); ... }
//   int main(int argc, char** argv) {
//     return lci::sim::run_program(argc, argv, /*ranks_default=*/2, rank_main);
//   }
//
// Environment (simulated): LCI_SIM_RANKS (rank count), LCI_SIM_SEED
// (default 1), LCI_SIM_MODE=concurrent (OS threads instead of fibers), and
// the world's own variables (LCI_SIM_FAULT_<NAME>, LCI_SIM_TRACE). Returns 0
// when every rank returned 0 and the run was clean; otherwise prints the
// report (seed, replay line) and returns 1. In concurrent mode a run that
// completes nothing for LCI_SIM_WATCHDOG_MS (default 10 s, 0: never) fails
// so too, with deterministic mode's deadlock report (sim_harness.hpp,
// "watchdog"), its ranks stopped at their next call into the simulator. LCI_SIM_FORCE=1 simulates even
// under a launcher; in process mode the LCI_SIM_* variables are ignored (the
// launcher sets the rank count).
//
// Blocking: until every rank returned or the run failed.
#pragma once

#include <functional>

namespace lci::sim {

using rank_main_t = int (*)(int argc, char** argv);

int run_program(int argc, char** argv, int ranks_default, rank_main_t rank_main);

// From inside a rank: runs body(0 .. threads_count-1) as threads of the
// calling rank (fibers of the seeded scheduler in deterministic mode, OS
// threads in concurrent mode) and returns when all have returned. Outside
// the simulator (a real process, process mode) they are std::threads; the
// first exception a thread threw is rethrown after all have returned.
void run_threads(int threads_count, const std::function<void(int)>& body);

}  // namespace lci::sim
