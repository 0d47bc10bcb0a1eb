// run_program(): the main() of an LCI program that runs on the simulated
// network when started directly (`bazel run //examples:hello_world`): the
// rank function runs as N ranks of one in-process world.
//
//   int rank_main(int argc, char** argv) { lci::g_runtime_init(); ... }
//   int main(int argc, char** argv) {
//     return lci::sim::run_program(argc, argv, /*ranks_default=*/2, rank_main);
//   }
//
// Environment: LCI_SIM_RANKS (rank count), LCI_SIM_SEED (default 1),
// LCI_SIM_MODE=concurrent (OS threads instead of fibers), and the world's
// own variables (LCI_SIM_FAULT_<NAME>, LCI_SIM_TRACE). Returns 0 when every
// rank returned 0 and the run was clean; otherwise prints the report (seed,
// replay line) and returns 1.
//
// Blocking: until every rank returned or the run failed.
#pragma once

#include <functional>

namespace lci::sim {

using rank_main_t = int (*)(int argc, char** argv);

int run_program(int argc, char** argv, int ranks_default, rank_main_t rank_main);

// From inside a rank: runs body(0 .. threads_count-1) as threads of the
// calling rank (fibers of the seeded scheduler in deterministic mode, OS
// threads in concurrent mode) and returns when all have returned. Throws
// std::logic_error outside a simulated rank.
void run_threads(int threads_count, const std::function<void(int)>& body);

}  // namespace lci::sim
