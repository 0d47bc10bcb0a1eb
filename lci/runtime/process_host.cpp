#include "lci/runtime/process_host.hpp"

#include <memory>
#include <string>
#include <thread>

#include "backends/backend_registry.hpp"
#include "backends/linked_backends.hpp"
#include "lci/api/lci_generated.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/runtime/runtime_impl.hpp"

namespace lci::detail {

real_process_host_t::~real_process_host_t() { delete g_runtime_; }

void real_process_host_t::idle(const char* what) {
  (void)what;
  std::this_thread::yield();  // let the peers on this machine run
}

unsigned& real_process_host_t::dispatch_depth() {
  thread_local unsigned depth = 0;
  return depth;
}

std::unique_ptr<backend::net_context_t> open_real_network(bootstrap::bootstrap_t& bootstrap) {
  const attr_net_context_t attr = get_default_attr_net_context();
  backend::net_context_args_t args;
  args.bootstrap = &bootstrap;
  args.provider_name = attr.ofi_provider_name;
  args.device_name = attr.device_name;
  // backend = none: the best backend of this build that opens.
  const std::string name =
      attr.backend == attr_backend_t::none ? std::string() : get_attr_backend_str(attr.backend);
  return backend::linked_backends().open(name, args);
}

namespace {

// What process_host() creates. Destroyed bottom-up: the host (and a global
// runtime left in it), the network, the bootstrap.
struct process_network_t {
  // release: see g_process_runtime_slot (host.hpp).
  process_network_t() { g_process_runtime_slot.store(&host.g_runtime_slot(), util::mo_release); }
  // Withdrawn before the host (a member) is destroyed.
  // Equivalent mutants: mo_weaken. A reader that loads the null
  // dereferences nothing, so the release publishes nothing; one that still
  // loads the old address would use a host being destroyed, which no order
  // prevents (no operation may run during the process's exit). Kept release
  // as every store of the slot (docs/verification.md, runs 42-46).
  ~process_network_t() { g_process_runtime_slot.store(nullptr, util::mo_release); }
  process_network_t(const process_network_t&) = delete;
  process_network_t& operator=(const process_network_t&) = delete;

  std::unique_ptr<bootstrap::bootstrap_t> bootstrap = bootstrap::open_bootstrap();
  std::unique_ptr<backend::net_context_t> context = open_real_network(*bootstrap);
  real_process_host_t host{*context};
};

}  // namespace

host_t& process_host() {
  // Created on first use (a throwing creation is tried again by the next
  // call); destroyed at exit, after main() returns.
  static process_network_t network;
  return network.host;
}

}  // namespace lci::detail
