#include "backends/linked_backends.hpp"

#include <memory>
#include <string>
#include <utility>

#include "backends/shm/shm_device.hpp"
#include "backends/shm/shm_route.hpp"
#include "lci/bootstrap/locality.hpp"
#include "lci/util/log.hpp"

// One block per backend, its macro set by //backends:linked.
#if defined(LCI_LINK_OFI)
#include "backends/ofi/ofi_backend.hpp"
#endif
#if defined(LCI_LINK_IBV)
#include "backends/ibv/ibv_backend.hpp"
#endif

namespace lci::backend {

namespace {

registry_t make_registry() {
  registry_t registry;
#if defined(LCI_LINK_OFI)
  registry.add(backend::ofi::backend_entry());
#endif
#if defined(LCI_LINK_IBV)
  registry.add(backend::ibv::backend_entry());
#endif
  return registry;
}

}  // namespace

const registry_t& linked_backends() {
  static const registry_t registry = make_registry();
  return registry;
}

std::unique_ptr<net_context_t> open_process_network(const std::string& name,
                                                    const net_context_args_t& args,
                                                    bool shm_enable) {
  if (!shm_enable) return linked_backends().open(name, args);
  const bootstrap::locality_t locality = bootstrap::exchange_locality(*args.bootstrap);
  const int rank_n = static_cast<int>(locality.peers.size());
  // No two ranks share a node: nothing for shared memory to carry.
  if (locality.node_n == rank_n) return linked_backends().open(name, args);
  auto shm = std::make_unique<shm::shm_context_t>(*args.bootstrap, locality);
  // Put and get between local ranks need CMA; without it they take the
  // network, if this build has one (every rank of a node agrees on CMA).
  if (!shm->cma_available() && !linked_backends().empty()) {
    LCI_LOG(info, "shm",
            "cross-memory attach is refused on this node: its ranks talk through the network");
    shm.reset();
  }
  std::unique_ptr<net_context_t> network;
  if (locality.node_n > 1 || shm == nullptr || !name.empty()) {
    network = linked_backends().open(name, args);
  }
  if (shm == nullptr) return network;
  return std::make_unique<shm::route_context_t>(std::move(shm), std::move(network));
}

}  // namespace lci::backend
