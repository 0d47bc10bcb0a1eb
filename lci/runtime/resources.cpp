#include "lci/runtime/resources.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lci/runtime/runtime_impl.hpp"
#include "lci/util/assert.hpp"

namespace lci::detail {

namespace {
// relaxed: each number is taken once (the increment is atomic); nothing
// else is published through these counters.
util::atomic<int> g_device_uids{0};
util::atomic<int> g_endpoint_uids{0};
}  // namespace

int next_device_uid() { return g_device_uids.fetch_add(1, util::mo_relaxed); }
int next_endpoint_uid() { return g_endpoint_uids.fetch_add(1, util::mo_relaxed); }

packet_pool_impl_t::packet_pool_impl_t(runtime_impl_t* runtime, const attr_packet_pool_t& attr,
                                       std::size_t packet_return_threshold,
                                       std::size_t receive_reserve)
    : runtime(runtime),
      attr(attr),
      pool(attr.packet_size, attr.npackets + receive_reserve, /*deques_count_max=*/64,
           packet_return_threshold, receive_reserve),
      receive_packets_max_(attr.npackets - std::max<std::size_t>(1, attr.npackets / 4)) {
  LCI_ASSERT(attr.npackets >= 1, "a packet pool without packets");
}

std::size_t packet_pool_impl_t::take_receive_shares(std::size_t wanted, bool device_has_none) {
  LCI_ASSERT(wanted >= 1, "no receive share wanted");
  // relaxed: see receive_packets_.
  const std::size_t before = receive_packets_.fetch_add(wanted, util::mo_relaxed);
  std::size_t granted =
      before < receive_packets_max_ ? std::min(wanted, receive_packets_max_ - before) : 0;
  if (granted == 0 && device_has_none) granted = 1;
  if (granted < wanted) receive_packets_.fetch_sub(wanted - granted, util::mo_relaxed);
  return granted;
}

void packet_pool_impl_t::return_receive_share(std::size_t count) {
  // relaxed: see receive_packets_.
  const std::size_t before = receive_packets_.fetch_sub(count, util::mo_relaxed);
  LCI_ASSERT(before >= count, "more receive packets returned than taken");
}

void packet_pool_impl_t::check_before_free() const {
  const std::size_t out = pool.packets_count() - pool.packets_free_count();
  if (out != 0) {
    throw std::invalid_argument(
        "free_packet_pool: " + std::to_string(out) +
        " packet(s) still out: held by the program (get_upacket, zero-copy AM "
        "buffers) or by unexpected messages nobody received; put them back or receive the "
        "messages first, or leave the pool to runtime finalization");
  }
}

matching_engine_impl_t::matching_engine_impl_t(runtime_impl_t* runtime,
                                               const attr_matching_engine_t& attr,
                                               std::uint32_t index, std::size_t buckets_count,
                                               std::size_t overflow_nodes_max)
    : runtime(runtime), attr(attr), index(index), table(buckets_count, overflow_nodes_max) {}

}  // namespace lci::detail
