// An LCI program as a user outside this repository writes it: the examples'
// hello_world, built against an installed LCI (tests/install). Started
// directly, its ranks run on the simulated network (LCI_SIM_RANKS, default
// 2); under a launcher, with libfabric installed, it is one rank of the job.
#include <cstdio>

#include "lci.hpp"
#include "sim/sim_program.hpp"

namespace {

int rank_main(int /*argc*/, char** /*argv*/) {
  lci::g_runtime_init();
  const int rank_me = lci::get_rank_me();
  const int rank_n = lci::get_rank_n();
  std::printf("rank %d of %d\n", rank_me, rank_n);
  lci::barrier();
  lci::g_runtime_fina();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return lci::sim::run_program(argc, argv, /*ranks_default=*/2, rank_main);
}
