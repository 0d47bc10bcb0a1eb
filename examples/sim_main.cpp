// main() of an example run on the simulated network
// (examples/example_main.hpp): lci::sim::run_program runs rank_main as the
// ranks of one process (LCI_SIM_RANKS, default 2).
#include "examples/example_main.hpp"
#include "sim/sim_program.hpp"

void example::run_threads(int threads_count, const std::function<void(int)>& body) {
  lci::sim::run_threads(threads_count, body);
}

int main(int argc, char** argv) {
  return lci::sim::run_program(argc, argv, /*ranks_default=*/2, example::rank_main);
}
