#include "lci/runtime/device_receives.hpp"

#include <algorithm>
#include <cstddef>

#include "lci/api/lci_config.hpp"
#include "lci/packet_pool/packet_pool.hpp"
#include "lci/util/assert.hpp"

namespace lci::detail {

namespace {
// Receive regions per device (at most net_max_recvs), and the size of each
// in packets: 4 x 32 packets is half the memory of the 256 packets a device
// keeps posted otherwise. A region takes up to 32 of the largest eager
// messages, and thousands of small ones, before it is posted again.
constexpr std::size_t recv_regions_max = 4;
constexpr std::size_t recv_region_packets = 32;
// The most receives topped up at once (refill_batch_): two polls' worth of
// arrivals, an eighth of the 256 a device keeps posted.
constexpr std::size_t refill_batch_max = 2 * LCI_BACKEND_MAX_POLLS;
}  // namespace

device_receives_t::device_receives_t(backend::net_device_t& net, packet_pool_impl_t* packet_pool,
                                     std::uint32_t receive_mark)
    : net_(&net), packet_pool_(packet_pool), receive_mark_(receive_mark) {
  // The posted count on a line of its own, after the fields that are only
  // read.
  static_assert(offsetof(device_receives_t, posted_) % util::cache_line_bytes == 0 &&
                    offsetof(device_receives_t, posted_) >=
                        offsetof(device_receives_t, refill_batch_) + sizeof(refill_batch_),
                "the posted count shares a cache line with the fields only read");
  LCI_ASSERT(receive_mark != 0, "0 marks no receive");
  const backend::net_device_attr_t& net_attr = net_->attr();
  if (packet_pool_ == nullptr) {
    // A raw device: the program's receives are the only ones.
    LCI_ASSERT(!net_attr.supports_multi_recv, "a raw device was given receive regions");
  } else if (net_attr.supports_multi_recv) {
    LCI_ASSERT(net_attr.multi_recv_min_free >= packet_pool_->attr.packet_size,
               "the network releases receive regions with less than a packet free");
    regions_ = std::make_unique<recv_regions_t>(
        std::min(recv_regions_max, net_attr.net_max_recvs),
        recv_region_packets * net_attr.multi_recv_min_free);
    // The packets replenish_regions() posts while a region is refused.
    refill_batch_ = std::clamp<std::size_t>(net_attr.net_max_recvs / 4, 1, refill_batch_max);
  } else {
    target_ = net_attr.net_max_recvs;
    refill_batch_ = std::clamp<std::size_t>(target_ / 4, 1, refill_batch_max);
  }
}

void device_receives_t::release_region_posting(const backend::net_status_t& status) {
  LCI_ASSERT(regions_ != nullptr, "a region released on a device without regions");
  regions_->release_posting(status);
}

void device_receives_t::drop_posted() {
  const std::size_t dropped = posted_.load(util::mo_relaxed);  // relaxed: nothing posts now
  if (packet_pool_ == nullptr) {
    LCI_ASSERT(dropped == 0, "a raw device pre-posted packets");
    return;
  }
  const std::size_t reclaimed = packet_pool_->pool.reclaim_marked(receive_mark_);
  LCI_ASSERT(reclaimed == dropped, "the packets posted as receives and their count differ");
  packet_pool_->return_receive_share(dropped);
}

bool device_receives_t::post_packets(std::size_t target) {
  bool posted_any = false;
  while (true) {
    // Reserves a chunk before posting it, so that threads topping up at
    // once never post past the target between them. relaxed: see posted_.
    const std::size_t chunk = refill_batch_;
    const std::size_t before = posted_.fetch_add(chunk, util::mo_relaxed);
    const std::size_t wanted = before < target ? std::min(chunk, target - before) : 0;
    // The pool's receive share (packet_pool_impl_t) keeps packets for sends.
    const std::size_t shares =
        wanted == 0 ? 0 : packet_pool_->take_receive_shares(wanted, /*device_has_none=*/before == 0);
    std::size_t posted = 0;
    // What the chunk did not post is given back, also when a post throws
    // (a crashed rank in the simulator): the count of posted receives must
    // stay the number of packets out with this device's mark (drop_posted).
    const auto settle = [&] {
      if (shares > posted) packet_pool_->return_receive_share(shares - posted);
      if (chunk > posted) posted_.fetch_sub(chunk - posted, util::mo_relaxed);
    };
    try {
      // A device with no receive posted may take a reserved packet.
      while (posted < shares && post_packet(/*may_use_reserve=*/before == 0 && posted == 0)) {
        ++posted;
      }
    } catch (...) {
      settle();
      throw;
    }
    settle();
    posted_any = posted_any || posted > 0;
    if (posted < chunk) break;  // the target reached, or no share, packet or room
  }
  return posted_any;
}

bool device_receives_t::post_packet(bool may_use_reserve) {
  void* packet = packet_pool_->pool.get();
  if (packet == nullptr && may_use_reserve) packet = packet_pool_->pool.get_reserved();
  if (packet == nullptr) return false;
  packet_pool_->pool.mark_receive(packet, receive_mark_);
  // Back to the pool, unmarked, unless the network took it: after a refusal
  // and after a throw alike.
  struct unposted_t {
    packet_pool::pool_t& pool;
    void* packet;
    ~unposted_t() {
      if (packet == nullptr) return;
      pool.unmark_receive(packet);
      pool.put(packet);
    }
  } unposted{packet_pool_->pool, packet};
  if (!net_->post_recv(packet, packet_pool_->attr.packet_size, backend::net_mr_t{}, nullptr)
           .is_done()) {
    return false;
  }
  unposted.packet = nullptr;
  return true;
}

bool device_receives_t::replenish_regions() {
  bool refused_nomem = false;
  const bool posted = regions_->post_ready(*net_, &refused_nomem);
  // A network out of room for a region may stay so until receives take the
  // messages it holds unmatched: libfabric 1.17's shm keeps its unexpected
  // messages in the same rx_attr.size entries as posted receives, takes an
  // entry for a multi-receive post before it looks at them (-FI_ENOMEM when
  // none is free), and hands them over only to receives posted later,
  // where a plain receive needs no entry of its own. So while a region is
  // refused so, packets are posted, a batch at a time (the next once the
  // last has been consumed), each taking one held message and freeing its
  // entry, until a region is taken again. relaxed: see posted_.
  if (!refused_nomem || posted_.load(util::mo_relaxed) != 0) return posted;
  return post_packets(refill_batch_) || posted;
}

}  // namespace lci::detail
