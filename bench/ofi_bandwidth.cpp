// LCI's bandwidth over libfabric (ofi_bench.hpp, ofi_lci_transport.hpp):
//   tools/lcirun -n 2 bazel-bin/bench/ofi_bandwidth [--help for options]
#include "bench/ofi_bench.hpp"
#include "bench/ofi_lci_transport.hpp"

int main(int argc, char** argv) {
  return lci::bench::run_main(lci::bench::bench_kind_t::bandwidth, argc, argv,
                              lci::bench::make_lci_transport);
}
