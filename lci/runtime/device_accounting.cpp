#include "lci/runtime/device_accounting.hpp"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

#include "lci/util/assert.hpp"

namespace lci::detail {

namespace {
// The standing registrations (rendezvous receives' and the program's) a
// device may hold at once. Where the protocol registers local buffers
// (requires_local_mr), a quarter of the network's registrations, at least
// one, stays for sends, puts and gets, which finish without a peer's help;
// otherwise the protocol registers nothing else, and standing ones may take
// them all. So may the program's on a raw device, where the protocol never
// runs.
std::size_t standing_registrations_max_of(const backend::net_device_attr_t& net_attr, bool raw) {
  const std::size_t total = net_attr.registrations_max;
  if (total == 0) return std::numeric_limits<std::size_t>::max();  // no known limit
  const std::size_t reserved =
      net_attr.requires_local_mr && !raw ? std::max<std::size_t>(1, total / 4) : 0;
  if (total <= reserved) {
    throw std::invalid_argument(
        "alloc_device: the network allows " + std::to_string(total) +
        " memory registration(s) per device; the protocol needs at least 2 (a rendezvous "
        "receive's, and one kept for sends, puts and gets)");
  }
  return total - reserved;
}
}  // namespace

device_accounting_t::device_accounting_t(const backend::net_device_attr_t& net_attr, bool raw)
    : standing_registrations_max_(standing_registrations_max_of(net_attr, raw)) {
  // Each count on a line of its own (the header names the threads that
  // write each one).
  static_assert(offsetof(device_accounting_t, network_posts_) -
                        offsetof(device_accounting_t, in_flight_count_) >=
                    util::cache_line_bytes,
                "the in-flight and network-post counts share a cache line");
  static_assert(offsetof(device_accounting_t, standing_registrations_) -
                        offsetof(device_accounting_t, network_posts_) >=
                    util::cache_line_bytes,
                "the network-post and registration counts share a cache line");
  static_assert(alignof(device_accounting_t) == util::cache_line_bytes,
                "a device's counts do not start a cache line");
}

bool device_accounting_t::take_standing_registration() {
  // relaxed: a budget; the registration a share admits is made afterwards
  // by the same thread, and the network bounds the real number anyway.
  const std::size_t before = standing_registrations_.fetch_add(1, util::mo_relaxed);
  if (before < standing_registrations_max_) return true;
  standing_registrations_.fetch_sub(1, util::mo_relaxed);  // relaxed: as above
  return false;
}

void device_accounting_t::return_standing_registration() {
  // relaxed: as in take_standing_registration().
  const std::size_t before = standing_registrations_.fetch_sub(1, util::mo_relaxed);
  LCI_ASSERT(before >= 1, "a standing registration share returned twice");
}

}  // namespace lci::detail
