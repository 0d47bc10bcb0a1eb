// hello_world: the smallest LCI program. Every rank starts the global
// runtime, says who it is, waits for the others in a barrier and finalizes.
//
//   bazel run //examples:hello_world_sim                  # 2 simulated ranks
//   LCI_SIM_RANKS=8 bazel run //examples:hello_world_sim  # 8 ranks
//   tools/lcirun -n 4 bazel-bin/examples/hello_world      # 4 processes (--config=ofi)
//
// Each line reads "rank <r> of <n>". rank_main is what one rank runs: once
// per process in hello_world, once per simulated rank in hello_world_sim
// (example_main.hpp).
#include <cstdio>

#include "examples/example_main.hpp"
#include "lci.hpp"

int example::rank_main(int /*argc*/, char** /*argv*/) {
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
