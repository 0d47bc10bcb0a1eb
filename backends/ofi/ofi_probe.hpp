// What libfabric offers on this machine, asked before any device is built:
// the library version and the providers that can open a reliable-datagram
// endpoint. Compiled only with --config=ofi.
//
// Thread safety: safe to call from any thread. Blocking: may block in
// fi_getinfo (provider discovery). Allocation: returns owned std:: values.
#pragma once

#include <string>
#include <vector>

namespace lci::backend::ofi {

struct probe_result_t {
  unsigned version_major = 0;
  unsigned version_minor = 0;
  // Providers (e.g. "shm", "tcp;ofi_rxm") that offer FI_EP_RDM with
  // FI_MSG | FI_RMA; empty with a reason in `error` when none does.
  std::vector<std::string> providers;
  std::string error;
};

probe_result_t probe();

}  // namespace lci::backend::ofi
