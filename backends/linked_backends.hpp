// linked_backends(): the registry (backend_registry.hpp) of the real
// network backends this build compiled in: ofi with --config=ofi, ibv with
// --config=ibv, none by default. The list is the one place that names them; //backends:linked
// selects its dependencies by config. Calling it links them in, so static
// libraries (liblci.a) keep them with no static-initialisation trick.
//
// Thread safety: linked_backends() from any thread, the first call fills
//                the registry; open_process_network() as a bootstrap
//                collective (one thread per process).
// Allocation:    at the first call; open_process_network() the contexts.
#pragma once

#include "backends/backend_registry.hpp"

namespace lci::backend {

const registry_t& linked_backends();

// The network of this process (collective, as registry_t::open). With
// shm_enable and at least two ranks on some node: the locality exchange,
// the node's shm context, and a route_context_t (backends/shm/shm_route.hpp)
// that takes the local ranks to it and the others to the backend `name`
// opens (as linked_backends().open), which is opened only when some rank is
// remote, a backend is named, or the node refuses cross-memory attach (the
// shm context is then dropped, with a log line). Otherwise the backend
// alone, as before. Every rank passes the same shm_enable.
std::unique_ptr<net_context_t> open_process_network(const std::string& name,
                                                    const net_context_args_t& args,
                                                    bool shm_enable);

}  // namespace lci::backend
