// An upstream-style LCI program: its own main(), liblci only. With libfabric
// installed it runs as one rank when started directly and as one rank of a
// job under a launcher; without a real network the runtime cannot start and
// says why (tests/install checks both).
#include <cstdio>
#include <exception>

#include "lci.hpp"

int main() {
  try {
    lci::g_runtime_init();
    std::printf("rank %d of %d\n", lci::get_rank_me(), lci::get_rank_n());
    lci::barrier();
    lci::g_runtime_fina();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "plain: %s\n", error.what());
    return 1;
  }
  return 0;
}
