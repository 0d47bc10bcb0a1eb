#include "lci/runtime/host.hpp"

#include <stdexcept>

#include "lci/util/atomic.hpp"

namespace lci::detail {

namespace {
// acquire/release: a lookup installed by one thread is seen with everything
// it set up by threads that start runtimes afterwards.
util::atomic<host_lookup_fn_t> g_lookup{nullptr};
}  // namespace

void set_host_lookup(host_lookup_fn_t lookup) { g_lookup.store(lookup, util::mo_release); }

host_t& current_host() {
  const host_lookup_fn_t lookup = g_lookup.load(util::mo_acquire);
  host_t* host = lookup != nullptr ? lookup() : nullptr;
  if (host == nullptr) {
    throw std::runtime_error(
        "lci: no network for this thread: run the program under the simulator "
        "(lci::sim::run_ranks or an example's main) or a launcher");
  }
  return *host;
}

}  // namespace lci::detail
