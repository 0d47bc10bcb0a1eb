#include "backends/linked_backends.hpp"

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

}  // namespace lci::backend
