// Devices opened and closed in turn by every rank of a job (each closed
// before the next opens, none carrying traffic): each must open, and its
// address vector must map every rank. With 3 or more ranks over shm
// (libfabric 1.17) the second device's AV did not number the ranks from 0,
// which the backend once assumed ("AV index differs from the rank"); it
// now maps rank and address both ways (ofi_device_t::insert_peers).
// Prints "rank R: N devices ok" on success.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "backends/ofi/ofi_context.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "tests/backends/ofi/ofi_test_env.hpp"

int main(int argc, char** argv) {
  const int devices = argc > 1 ? std::atoi(argv[1]) : 20;
  const auto bootstrap = lci::bootstrap::open_bootstrap();
  lci::backend::ofi::ofi_context_t context(*bootstrap, lci::conformance::provider_from_env());
  for (int i = 0; i < devices; ++i) {
    try {
      const std::unique_ptr<lci::backend::net_device_t> device = context.alloc_device({});
    } catch (const std::exception& error) {
      std::printf("rank %d: device %d failed: %s\n", bootstrap->rank_me(), i, error.what());
      return 1;
    }
    bootstrap->barrier();  // every rank closed this device before the next opens
  }
  std::printf("rank %d: %d devices ok\n", bootstrap->rank_me(), devices);
  return 0;
}
