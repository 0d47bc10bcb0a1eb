// How an example starts, wherever its ranks run. An example defines
// example::rank_main (what one rank runs, from g_runtime_init to
// g_runtime_fina) and starts its threads with example::run_threads; the
// library it is linked with defines main() and run_threads()
// (examples/example.bzl builds each example with both):
//
//   //examples:process_main  <name>: the process is one rank of a job a
//       launcher started (tools/lcirun, srun, mpirun), or a job of one;
//       its threads are std::threads. No simulator is linked: a build
//       without a real network (--config=ofi, --config=ibv) cannot run it.
//   //examples:sim_main      <name>_sim: the program asks for the
//       simulator (//sim:sim_program): its ranks run on the simulated
//       network in this one process (lci::sim::run_program: LCI_SIM_RANKS,
//       default 2), and run_threads makes threads of the calling rank
//       (lci::sim::run_threads: fibers of the seeded scheduler in
//       deterministic mode, OS threads bound to the rank otherwise).
//
// Either main() returns rank_main's status (run_program: 0 when every rank
// returned 0), and 1 with the message when rank_main threw.
#pragma once

#include <functional>

namespace example {

// Defined by each example.
int rank_main(int argc, char** argv);

// Runs body(0 .. threads_count-1) as threads of the calling rank and
// returns when all have returned; the first exception a thread threw is
void run_threads(int threads_count, const std::function<void(int)>& body);

}  // namespace example
