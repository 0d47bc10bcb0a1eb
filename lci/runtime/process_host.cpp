#include "lci/runtime/process_host.hpp"

#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "lci/api/lci_generated.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/runtime/runtime_impl.hpp"

#if defined(LCI_HAVE_OFI)
#include "backends/ofi/ofi_context.hpp"
#endif

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
#if defined(LCI_HAVE_OFI)
  const attr_net_context_t attr = get_default_attr_net_context();
  return std::make_unique<backends::ofi::ofi_context_t>(bootstrap, attr.ofi_provider_name,
                                                        attr.device_name);
#else
  (void)bootstrap;
  throw std::runtime_error(
      "lci: no network for this process: run the program under the simulator "
      "(lci::sim::run_ranks, or an example's main), or build with --config=ofi "
      "(libfabric) and start it under a launcher (tools/lcirun -n N prog)");
#endif
}

namespace {

// What process_host() creates. Destroyed bottom-up: the host (and a global
// runtime left in it), the network, the bootstrap.
struct process_network_t {
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
