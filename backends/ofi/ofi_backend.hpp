// The libfabric backend as the registry (backends/backend_registry.hpp)
// knows it: name "ofi"; its context is ofi_context_t over the process's
// bootstrap, provider_name a libfabric provider ("shm", "tcp;ofi_rxm"; ""
// the first usable, ofi_context.hpp), device_name an interface or address.
#pragma once

#include "backends/backend_registry.hpp"

namespace lci::backend::ofi {

const backend::backend_entry_t& backend_entry();

}  // namespace lci::backend::ofi
