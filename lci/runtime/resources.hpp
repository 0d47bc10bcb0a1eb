// The small resources of a runtime (paper §3.3): endpoints, packet pools,
// matching engines and memory registrations, as the runtime holds them
// behind the public handles (endpoint_t, packet_pool_t, matching_engine_t,
// mr_t). Devices and runtimes have their own headers.
//
// Thread safety: every member may be used concurrently, except construction
//                and destruction (the free_* calls), which the user must not
//                overlap with other uses of the same resource.
// Ownership:     each belongs to the runtime that allocated it; free_* or
//                the runtime's destruction deletes it.
// Allocation:    at allocation only (the packet pool's packets, the
//                matching table's buckets and overflow nodes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/backend.hpp"
#include "lci/api/lci_generated.hpp"
#include "lci/matching/matching_table.hpp"
#include "lci/packet_pool/packet_pool.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

class runtime_impl_t;
class device_impl_t;

// The next number for the uid output attribute of a device or an endpoint:
// 0, 1, ... per kind, in allocation order across every runtime of the
// process (as upstream numbers them). Any thread.
int next_device_uid();
int next_endpoint_uid();

// A handle on the runtime's network: every net context of a runtime names
// the host's network (one network per simulated rank or process so far).
class net_context_impl_t {
 public:
  net_context_impl_t(runtime_impl_t* runtime, const attr_net_context_t& attr)
      : runtime(runtime), attr(attr) {}
  runtime_impl_t* const runtime;
  const attr_net_context_t attr;
};

class endpoint_impl_t {
 public:
  endpoint_impl_t(device_impl_t* device, const attr_endpoint_t& attr)
      : device(device), attr(numbered(attr)) {}
  device_impl_t* const device;
  const attr_endpoint_t attr;

 private:
  static attr_endpoint_t numbered(attr_endpoint_t attr) {
    attr.uid = next_endpoint_uid();
    return attr;
  }
};

// Receives: the devices that receive into a pool keep packets posted
// (device_receives_t::post_packets), together at most receive_packets_max: the
// rest (a quarter, at least one) stays for sends, so that a pool shared by
// many devices, or a small one, never has every packet waiting for an
// arrival while posts wait for a packet. A device with no receive posted
// may still take one past the bound (it could receive nothing otherwise).
//
// That one packet must exist: sends hold theirs until the peer receives, so
// two ranks whose pools sends have emptied, each device with no receive
// posted, would wait for each other forever (the other devices' posted
// receives, idle ones too, hold the rest). So the pool keeps
// `receive_reserve` packets beyond attr.npackets that get() never hands out
// (pool_t's reserved packets): a device with no receive posted takes one
// when the pool has none, and it comes back to the reserve once its arrival
// is done with, whoever puts it back. With no more devices on the pool than
// the reserve (4 in the simulator, 64 otherwise), every device can always
// post a receive, and every message sent is received.
class packet_pool_impl_t {
 public:
  packet_pool_impl_t(runtime_impl_t* runtime, const attr_packet_pool_t& attr,
                     std::size_t packet_return_threshold, std::size_t receive_reserve);
  runtime_impl_t* const runtime;
  const attr_packet_pool_t attr;  // packet_size and npackets resolved
  packet_pool::pool_t pool;

  // How many of `wanted` packets may be posted as receives: what is left of
  // the receives' share, or 1 past it when `device_has_none`. Undone by
  // return_receive_share().
  [[nodiscard]] std::size_t take_receive_shares(std::size_t wanted, bool device_has_none);
  void return_receive_share(std::size_t count);

  // free_packet_pool, once no device uses the pool (closing devices gave
  // their posted receives' packets back): throws invalid_argument, changing
  // nothing, when packets are still out (an unexpected message nobody
  // received holds one): freeing the pool would lose those messages.
  void check_before_free() const;

 private:
  std::size_t receive_packets_max_;
  // relaxed (both methods): a budget; the packets themselves pass through
  // the pool, whose own synchronisation orders them.
  util::atomic<std::size_t> receive_packets_{0};
};

class matching_engine_impl_t {
 public:
  // `index` is the engine's position in its runtime: messages name their
  // engine by index, so ranks must allocate matching engines in the same
  // order (the default engine is index 0 everywhere).
  matching_engine_impl_t(runtime_impl_t* runtime, const attr_matching_engine_t& attr,
                         std::uint32_t index, std::size_t buckets_count,
                         std::size_t overflow_nodes_max);
  runtime_impl_t* const runtime;
  const attr_matching_engine_t attr;
  const std::uint32_t index;
  matching::table_t table;
};

class mr_impl_t {
 public:
  mr_impl_t(device_impl_t* device, backend::net_mr_t net_mr) : device(device), net_mr(net_mr) {}
  device_impl_t* const device;
  // Empty (no backend handle) for a registration of 0 bytes: the network
  // holds nothing for it (register_memory).
  backend::net_mr_t net_mr;
  bool holds_no_bytes() const { return net_mr.is_empty(); }
  // Peers' checked puts and gets under way in this registration
  // (runtime_impl_t::pin_registration; lci/protocol/rma_checked.cpp):
  // deregister_memory waits until none is left, so that no byte moves
  // after it returns. Taken under the runtime's resources lock while the
  // registration is in its list; dropped by unpin().
  util::atomic<std::int64_t> pins{0};
  void unpin() {
    // release: pairs with the acquire of whoever waits to deregister
    // (wait_unpinned), after the access's last byte moved.
    const std::int64_t before = pins.fetch_sub(1, util::mo_release);
    LCI_ASSERT(before >= 1, "a registration unpinned twice");
  }
};

}  // namespace lci::detail
