// hello_world: the smallest LCI program. Every rank starts the global
// runtime, says who it is, waits for the others in a barrier and finalizes.
//
//   bazel run //examples:hello_world                      # 2 simulated ranks
//   LCI_SIM_RANKS=8 bazel run //examples:hello_world      # 8 ranks
//
// Each line reads "rank <r> of <n>". Started directly, the program runs its
// ranks on the simulated network (lci::sim::run_program); rank_main is what
// one process of a real job would run.
#include <cstdio>

#include "lci.hpp"
#include "sim/sim_program.hpp"

namespace {

int rank_main(int /*argc*/, char** /*argv*/) {
  // The global runtime: default device, packet pool, matching engine.
  lci::g_runtime_init();
  const int rank_me = lci::get_rank_me();
  const int rank_n = lci::get_rank_n();
  std::printf("rank %d of %d\n", rank_me, rank_n);
  // No rank finalizes while another may still talk to it.
  lci::barrier();
  lci::g_runtime_fina();
  if (rank_n < 1 || rank_me < 0 || rank_me >= rank_n) {
    std::fprintf(stderr, "rank %d of %d: not a valid rank\n", rank_me, rank_n);
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return lci::sim::run_program(argc, argv, /*ranks_default=*/2, rank_main);
}
