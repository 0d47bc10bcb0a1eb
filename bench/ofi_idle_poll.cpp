// The idle poll: N rounds of progress() and cq_pop() on a process that has
// nothing to receive — what every thread waiting for a completion runs, so
// its cost is paid several times per message by a waiting rank. Prints the
// rounds per second; run it under callgrind with two N for instructions per
// round (docs/bench_ofi.md, "Where the time goes").
//
//   bazel build --config=ofi //bench:ofi_idle_poll
//   tools/lcirun -n 1 bazel-bin/bench/ofi_idle_poll 1000000
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "lci.hpp"

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? std::atol(argv[1]) : 1000000;
  if (rounds <= 0) {
    std::fprintf(stderr, "usage: ofi_idle_poll [rounds > 0]\n");
    return 2;
  }
  lci::g_runtime_init();
  lci::comp_t cq = lci::alloc_cq();
  long found = 0;  // anything found is a fault of the setup: reported below
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < rounds; ++i) {
    if (lci::progress().is_done()) ++found;
    if (!lci::cq_pop(cq).is_retry()) ++found;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%ld idle rounds (progress + cq_pop) in %.3f s: %.1f M rounds/s, %.1f ns each%s\n",
              rounds, seconds, rounds / seconds / 1e6, seconds / rounds * 1e9,
              found > 0 ? " (some found work: the first rounds post receives)" : "");
  lci::free_comp(&cq);
  lci::g_runtime_fina();
}
