#include "lci/runtime/host.hpp"

#include <stdexcept>

#include "lci/runtime/process_host.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

void set_host_lookup(host_lookup_fn_t lookup) { g_host_lookup.store(lookup, util::mo_release); }

host_t& current_host() {
  const host_lookup_fn_t lookup = g_host_lookup.load(util::mo_acquire);  // see g_host_lookup
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

}  // namespace lci::detail
