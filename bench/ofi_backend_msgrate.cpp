// ofi_msgrate over LCI's ofi backend alone, without the runtime
// (ofi_bench.hpp, ofi_backend_transport.hpp):
//   tools/lcirun -n 2 bazel-bin/bench/ofi_backend_msgrate [--help for options]
#include "bench/ofi_backend_transport.hpp"
#include "bench/ofi_bench.hpp"

int main(int argc, char** argv) {
  return lci::bench::run_main(lci::bench::bench_kind_t::msgrate, argc, argv,
                              lci::bench::make_backend_transport);
}
