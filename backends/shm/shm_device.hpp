// The shared-memory network of one node (docs/backends/shm.md, "The
// device"): shm_context_t and its devices, a net_context_t / net_device_t
// pair (backends/backend.hpp) that reaches only the ranks of this node.
//
// Layout of the segment's payload (every local rank computes the same
// offsets from the number of local ranks):
//   queues     one queue_t per (local rank, device slot): the receive queue
//              of that rank's device in that slot; its producers are the
//              local ranks, by local rank.
//   fragments  one pool per (local rank, device slot): fragments_per_pool
//              buffers of fragment_bytes, each with a busy word, written by
//              that rank's device (the sender) and freed by the receiver
//              once it copied the message out.
// A send of up to the queue's slot payload travels in its slot; a larger
// one (up to fragment_bytes: a larger post_send is std::invalid_argument,
// although max_msg_size, which put and get honour, is larger) is copied
// into one of the sender's fragments and the slot names it. put/get use cross-memory attach (CMA,
// shm_cma.hpp) to the pid the locality exchange named; a put's signal
// (putImm) is a queue message sent after the write.
//
// Devices: the n-th alloc_device() of a rank has generation n and slot
// n % devices_per_rank_max (a slot still in use is an error); every message carries the generation of its
// sender, so a device drops what an earlier device of its slot left behind
// and keeps for a later one what arrives early (the context holds it).
//
// Thread safety: as net_context_t / net_device_t. A device serialises its
//                calls with one try-lock (busy: retry_lock, or a poll of
//                nothing).
// Blocking:      the constructor is a bootstrap collective (segment,
//                CMA probe, one barrier); nothing else blocks.
// Ownership:     the context borrows the bootstrap for its constructor only
//                and owns the segment; devices borrow the context, which
//                outlives them.
// Allocation:    at construction and alloc_device(); the data path
//                allocates only when a message arrives for a device of a
//                later generation than the one polling.
// Limits:        devices_per_rank_max devices alive at once per rank (a
//                clear error beyond); posts only to ranks of this node
//                (std::invalid_argument otherwise); put/get throw
//                std::logic_error when CMA is refused on this node.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/backend.hpp"
#include "backends/shm/shm_cma.hpp"
#include "backends/shm/shm_queue.hpp"
#include "backends/shm/shm_segment.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/bootstrap/locality.hpp"
#include "lci/util/atomic.hpp"

namespace lci::backend::shm {

inline constexpr int devices_per_rank_max = 8;
inline constexpr std::uint32_t queue_slot_bytes = 256;
inline constexpr std::uint32_t queue_slots_count = 256;
inline constexpr std::size_t fragment_bytes = 64 * 1024;
inline constexpr std::uint32_t fragments_per_pool = 8;
// How often (at most) a poll asks the kernel whether local peers live.
inline constexpr std::uint64_t peer_check_interval_ns = 20'000'000;

// One message in a slot, besides the queue's own header.
struct wire_message_t {
  queue_status_t status = queue_status_t::empty;
  message_t header;
  unsigned char payload[queue_slot_bytes];
};

class shm_context_t final : public net_context_t {
 public:
  // Collective over every rank of the bootstrap.
  shm_context_t(bootstrap::bootstrap_t& bootstrap, const bootstrap::locality_t& locality);
  ~shm_context_t() override;

  int rank_me() const override { return locality_.rank_me; }
  int rank_n() const override { return static_cast<int>(locality_.peers.size()); }
  std::unique_ptr<net_device_t> alloc_device(const net_device_attr_t& requested) override;
  net_device_attr_t device_defaults() const override;
  bool supports_put_imm() const override { return true; }

  bool cma_available() const { return cma_.status == cma_status_t::available; }
  bool is_local(int rank) const { return locality_.peers[rank].is_local; }

  // Used by its devices.
  const bootstrap::locality_t& locality() const { return locality_; }
  int local_rank_of(int rank) const { return local_rank_of_[rank]; }
  queue_t& queue(int local_rank, int slot) {
    return queues_[local_rank * devices_per_rank_max + slot];
  }
  // The busy word and the bytes of fragment `index` of (local_rank, slot).
  util::atomic<std::uint32_t>& fragment_busy(int local_rank, int slot, std::uint32_t index);
  unsigned char* fragment(int local_rank, int slot, std::uint32_t index);
  // Whether the kernel has said the local rank is gone (refreshed at most
  // every peer_check_interval_ns by refresh_dead_peers()).
  bool is_dead(int local_rank) const { return dead_[local_rank].load(util::mo_relaxed) != 0; }
  void refresh_dead_peers();
  // Messages popped for a later generation of a slot, kept for it.
  // A device of a later generation of `slot` is alive only after the one
  // that holds for it is gone, so it takes them at construction.
  void hold(int slot, const wire_message_t& message);
  std::deque<wire_message_t> take_held(int slot, std::uint32_t generation);
  void release_slot(int slot);

 private:
  std::size_t queue_stride_bytes() const;
  std::size_t pool_stride_bytes() const;
  std::size_t payload_bytes() const;

  bootstrap::locality_t locality_;
  std::vector<int> local_rank_of_;  // -1: not on this node
  int local_rank_n_;
  segment_t segment_;
  cma_probe_t cma_;
  std::vector<queue_t> queues_;
  std::unique_ptr<util::atomic<int>[]> dead_;
  util::atomic<std::uint64_t> next_peer_check_ns_{0};
  std::mutex slots_mutex_;  // guards the three below (allocation, not the data path)
  std::uint32_t generations_n_ = 0;
  bool slot_used_[devices_per_rank_max] = {};
  std::deque<wire_message_t> held_[devices_per_rank_max];
};

}  // namespace lci::backend::shm
