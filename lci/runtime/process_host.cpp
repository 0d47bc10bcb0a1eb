#include "lci/runtime/process_host.hpp"

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "backends/backend.hpp"
#include "backends/backend_registry.hpp"
#include "backends/linked_backends.hpp"
#include "lci/api/lci_generated.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"

namespace lci::detail {

namespace {

// The host of a real process over a network context it does not own; owns
// a global runtime the program left behind (deleted first, while the
// network still exists).
class process_host_t final : public host_t {
 public:
  explicit process_host_t(backend::net_context_t& context) : context_(context) {}
  ~process_host_t() override { delete g_runtime_; }
  process_host_t(const process_host_t&) = delete;
  process_host_t& operator=(const process_host_t&) = delete;

  backend::net_context_t& net_context() override { return context_; }
  bool simulated() const override { return false; }
  runtime_impl_t*& g_runtime_slot() override { return g_runtime_; }
  // Yields the CPU once: the peers may share this machine.
  void idle(const char* what) override {
    (void)what;
    std::this_thread::yield();
  }
  void yield_when_idle() override { std::this_thread::yield(); }
  unsigned& dispatch_depth() override {  // per OS thread
    thread_local unsigned depth = 0;
    return depth;
  }

 private:
  backend::net_context_t& context_;
  runtime_impl_t* g_runtime_ = nullptr;
};

// The network context of a real backend of this build over `bootstrap`
// (collective), chosen and configured by the net context attributes
// (LCI_ATTR_BACKEND, ...), with shared memory between the ranks of a node
// unless LCI_ATTR_SHM_ENABLE=0; throws std::runtime_error when no real backend
// is compiled in, the one named is not, or it fails to open.
std::unique_ptr<backend::net_context_t> open_real_network(bootstrap::bootstrap_t& bootstrap) {
  const attr_net_context_t attr = get_default_attr_net_context();
  backend::net_context_args_t args;
  args.bootstrap = &bootstrap;
  args.provider_name = attr.ofi_provider_name;
  args.device_name = attr.device_name;
  // backend = none: the best backend of this build that opens.
  const std::string name =
      attr.backend == attr_backend_t::none ? std::string() : get_attr_backend_str(attr.backend);
  // shm_enable: read once, as the network opens once (device_impl.cpp
  // refuses a device that asks otherwise).
  return backend::open_process_network(name, args, get_default_attr_device().shm_enable);
}

// What process_host() creates. Destroyed bottom-up: the host (and a global
// runtime left in it), the network, the bootstrap.
struct process_network_t {
  // release: see g_process_runtime_slot (host.hpp).
  process_network_t() { g_process_runtime_slot.store(&host.g_runtime_slot(), util::mo_release); }
  // Withdrawn before the host (a member) is destroyed.
  // Equivalent mutants: mo_weaken. A reader that loads the null
  // dereferences nothing, so the release publishes nothing; one that still
  // loads the old address would use a host being destroyed, which no order
  // prevents: process_network_owner_t destroys the network only when no
  // runtime is left that another thread could be inside, and an operation
  // with no runtime alive during the process's exit is the program's error.
  // Kept release as every store of the slot (tools/mutate_records/2026-11-28-runs-35-59.md,
  // runs 42-46).
  ~process_network_t() { g_process_runtime_slot.store(nullptr, util::mo_release); }
  process_network_t(const process_network_t&) = delete;
  process_network_t& operator=(const process_network_t&) = delete;

  std::unique_ptr<bootstrap::bootstrap_t> bootstrap = bootstrap::open_bootstrap();
  std::unique_ptr<backend::net_context_t> context = open_real_network(*bootstrap);
  process_host_t host{*context};
};

// The number of threads of this process (Linux: "Threads:" of
// /proc/self/status); 0 when it cannot be read.
int process_threads_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return 0;
}

// Owns the process's network from its creation until the process exits
// (process_host.hpp, "Exit"). At exit the network can close only once no
// runtime uses it. The host destroys a global runtime the program left
// behind, but only if no other thread exists: a progress thread, a worker
// in sync_wait, or the rest of a program whose signal handler called exit()
// may be inside it, and destroying it and the network freed what they were
// using (they crashed in progress_device). A runtime of alloc_runtime the
// program never freed is not the host's to destroy, and a network with its
// devices still open does not close. In these cases the network is
// abandoned: only the bootstrap is finalized (a PMIx server counts a
// process that never finalized as failed), and the network and host stay
// for the rest of the process's short life.
class process_network_owner_t {
 public:
  process_network_owner_t() : network_(new process_network_t) {}
  ~process_network_owner_t() {
    const bool global_left = network_->host.g_runtime_slot() != nullptr;
    const bool others_alive = network_->host.runtimes_alive() > (global_left ? 1 : 0);
    // The only thread: no other can start now, since this one would start it.
    const bool abandon = others_alive || (global_left && process_threads_count() != 1);
    if (abandon) {
      network_->bootstrap.reset();
    } else {
      delete network_;
    }
  }
  process_network_owner_t(const process_network_owner_t&) = delete;
  process_network_owner_t& operator=(const process_network_owner_t&) = delete;

  process_network_t& network() { return *network_; }

 private:
  process_network_t* const network_;
};

process_network_t& process_network() {
  // Created on first use (a throwing creation is tried again by the next
  // call); ended at exit, after main() returns.
  static process_network_owner_t owner;
  return owner.network();
}

}  // namespace

host_t& process_host() { return process_network().host; }

bootstrap::bootstrap_t& process_bootstrap() { return *process_network().bootstrap; }

}  // namespace lci::detail
