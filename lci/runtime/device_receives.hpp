// device_receives_t: the receives a device keeps pre-posted for arrivals.
// When the network offers multi-receive buffers
// (net_device_attr_t::supports_multi_recv), a few receive regions take
// every arrival (recv_regions.hpp), and packets are posted only while the
// network refuses a region for want of room (replenish_regions()); else
// one packet of the device's pool per message, topped up in batches.
//
// Thread safety: every method may run concurrently with every other (the
//                progressing threads of a shared device): the posted count
//                is atomic, the network serialises posts with its
//                try-lock, regions count their arrivals atomically.
// Blocking:      never.
// Ownership:     owned by its device. A posted packet carries the device's
//                receive mark (pool_t::mark_receive) and is the device's
//                until its arrival (note_receive_taken: then the
//                runtime's); drop_posted() takes back those the closed
//                network dropped. The regions are this object's.
// Allocation:    the regions at construction; nothing after.
// Limits:        packets posted up to the network's net_max_recvs, and
//                within the packet pool's receive share
//                (packet_pool_impl_t::take_receive_shares).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backends/backend.hpp"
#include "lci/runtime/recv_regions.hpp"
#include "lci/runtime/resources.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"

namespace lci::detail {

class device_receives_t {
 public:
  // `net`: the device's network, which outlives this object's use of it
  // (drop_posted() runs after it closed). `packet_pool`: nullptr for a raw
  // device, which posts nothing. `receive_mark`: what the device's posted
  // packets carry (nonzero, unique in the process).
  device_receives_t(backend::net_device_t& net, packet_pool_impl_t* packet_pool,
                    std::uint32_t receive_mark);
  device_receives_t(const device_receives_t&) = delete;
  device_receives_t& operator=(const device_receives_t&) = delete;

  // Posts what is missing: the regions ready again, or packets up to
  // net_max_recvs once at least refill_batch_ of them are missing. false
  // when nothing could be posted (too few missing, no packet, or the
  // network refused). Nothing for a raw device.
  bool replenish() {
    if (regions_ != nullptr) return replenish_regions();
    // relaxed: see posted_.
    if (posted_.load(util::mo_relaxed) + refill_batch_ > target_) return false;
    return post_packets(target_);
  }
  // A pre-posted packet's arrival (progress_device, before dispatch): the
  // packet is the runtime's now, no longer the device's to take back when it
  // closes (pool_t::reclaim_marked).
  void note_receive_taken(void* packet) { packet_pool_->pool.unmark_receive(packet); }
  // `count` pre-posted packets took messages (they are the runtime's now):
  // progress notes a poll's worth at once, so that the counters every
  // thread of a shared device touches move once per poll, not per message.
  void note_receives_consumed(std::size_t count) {
    if (count == 0) return;
    posted_.fetch_sub(count, util::mo_relaxed);  // relaxed: see posted_
    packet_pool_->return_receive_share(count);
  }
  // The bytes of an arrival (a recv completion of a pre-posted receive) are
  // no longer read: its packet goes back to the pool, or its region's hold
  // is let go (arrival_t calls this).
  void release_arrival(const backend::net_status_t& status) {
    if (recv_regions_t::is_region_arrival(status)) {
      regions_->release_arrival(status);
    } else {
      packet_pool_->pool.put(status.buffer);
    }
  }
  // A completion with buffer_released: the network is done with a region.
  void release_region_posting(const backend::net_status_t& status);
  // Once the network device is closed (it completes none of the posted
  // receives and no longer writes them): their packets go back to the pool,
  // and their share with them.
  void drop_posted();

 private:
  // Pre-posted packets up to `target`, a batch at a time.
  bool post_packets(std::size_t target);
  // One packet of the pool posted as a receive; false when the pool is
  // empty or the network refused (the packet back in the pool). With
  // `may_use_reserve` (the device has no receive posted), a reserved packet
  // when the pool has no other (packet_pool_impl_t).
  bool post_packet(bool may_use_reserve);
  // replenish() of a device with receive regions.
  bool replenish_regions();

  backend::net_device_t* const net_;
  packet_pool_impl_t* const packet_pool_;
  const std::uint32_t receive_mark_;
  // Set when the network offers multi-receive buffers.
  std::unique_ptr<recv_regions_t> regions_;
  std::size_t target_ = 0;
  // Receives are topped up once this many are missing, and reserved and
  // posted this many at a time: the device-wide counters, the pool's share
  // and the network's lock then move once per chunk (for the network, its
  // lock stays in one core's cache through the chunk), which matters when
  // many threads progress one device. A quarter of the target, at most
  // refill_batch_max (device_receives.cpp): 8 of the simulator's default 32.
  std::size_t refill_batch_ = 1;
  // Packets posted, and reserved for posting. relaxed: a target for
  // topping up, not a guard; the network bounds the real number of posted
  // receives (a refused post_recv is a retry). Counts reservations too:
  // post_packets() adds a chunk before posting it and takes back what it
  // could not post. On a line of its own: every progressing thread of the
  // device writes it, apart from the fields above, which it only reads.
  alignas(util::cache_line_bytes) util::atomic<std::size_t> posted_{0};
};

}  // namespace lci::detail
