// linked_backends(): the registry (backend_registry.hpp) of the real
// network backends this build compiled in: ofi with --config=ofi, ibv with
// --config=ibv, none by default. The list is the one place that names them; //backends:linked
// selects its dependencies by config. Calling it links them in, so static
// libraries (liblci.a) keep them with no static-initialisation trick.
//
// Thread safety: any thread; the first call fills the registry.
// Allocation:    at the first call.
#pragma once

#include "backends/backend_registry.hpp"

namespace lci::backend {

const registry_t& linked_backends();

}  // namespace lci::backend
