#include "lci/runtime/host.hpp"

#include <stdexcept>

#include "backends/linked_backends.hpp"
#include "lci/api/lci_generated.hpp"
#include "lci/runtime/process_host.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

void set_host_lookup(host_lookup_fn_t lookup) { g_host_lookup.store(lookup, util::mo_release); }

namespace {

// The installed lookup; nullptr when none is (a real process).
host_lookup_fn_t installed_lookup() {
  const host_lookup_fn_t lookup = g_host_lookup.load(util::mo_acquire);  // see g_host_lookup
  return lookup;
}

}  // namespace

host_t& current_host() {
  const host_lookup_fn_t lookup = installed_lookup();
  // No simulator in this process: the program is a real process.
  if (lookup == nullptr) return process_host();
  host_t* host = lookup();
  if (host == nullptr) {
    throw std::runtime_error(
        "lci: no network for this thread: it is not a rank of the simulator running in "
        "this process (start it with lci::sim::run_threads from inside a rank)");
  }
  return *host;
}

namespace {

// Those of the linked backend a real process would open, before it does.
device_depths_t linked_backend_depths() {
  const backend::registry_t& registry = backend::linked_backends();
  if (registry.empty()) return {};
  const attr_runtime_t attr = get_default_attr_runtime();
  const backend::backend_entry_t* entry = attr.backend == attr_backend_t::none
                                              ? &registry.entries().front()
                                              : registry.find(get_attr_backend_str(attr.backend));
  if (entry == nullptr) return {};  // a backend not linked: opening it will fail
  return {entry->net_max_sends_default, entry->net_max_recvs_default, entry->net_max_cqes_default};
}

}  // namespace

device_depths_t host_t::device_depths() {
  const backend::net_device_attr_t defaults = net_context().device_defaults();
  return {defaults.net_max_sends, defaults.net_max_recvs, defaults.net_max_cqes};
}

host_t* looked_up_host() {
  const host_lookup_fn_t lookup = installed_lookup();
  return lookup == nullptr ? nullptr : lookup();
}

device_depths_t linked_device_depths() {
  // A looked-up host is cheap to ask, and so is a real process's once its
  // network is open (the slot is published then); opening it here would
  // come before set_g_default_attr could name its provider and device.
  host_t* host = looked_up_host();
  if (host == nullptr && g_process_runtime_slot.load(util::mo_acquire) != nullptr) {
    host = &current_host();  // acquire: see g_process_runtime_slot
  }
  return host != nullptr ? host->device_depths() : linked_backend_depths();
}

}  // namespace lci::detail
