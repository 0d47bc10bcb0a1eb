// recv_regions_t: a device's multi-receive buffers (backend post_recv_multi,
// libfabric's FI_MULTI_RECV), used instead of one pre-posted packet per
// message when the network offers them. The network packs arrivals one
// after another into a posted region, so a message costs no receive post of
// its own; a region is posted again once the network has released it and
// every arrival in it has been handled (its bytes copied out or no longer
// needed).
//
// Counting handled arrivals: a region's balance starts at 0 when posted;
// each handled arrival subtracts 1 (release_arrival), and the network's
// release adds the number of messages the region took (release_posting,
// from net_status_t::buffer_messages: only the network can count them, since
// other threads may still hold earlier completions of the same region). The
// balance is <= 0 until the release is added and >= 0 after it, so it
// returns to 0 exactly once, in whichever of those calls finishes the
// region: that call marks it for posting. (Before the release, a
// subtraction starts from 0 or below and cannot land on 0.)
//
// Thread safety: release_* from any threads (the threads dispatching a
//                device's completions); post_ready() from any thread (the
//                network device serialises with its try-lock; a refused post
//                stays marked for the next call).
// Blocking:      never.
// Ownership:     owns the regions' memory; the network holds a posted region
//                until it reports the release; an arrival's bytes are the
//                dispatching thread's until its release_arrival.
// Allocation:    at construction only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/backend.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

class recv_regions_t {
 public:
  // `count` regions of `region_bytes` each, all marked for posting.
  recv_regions_t(std::size_t count, std::size_t region_bytes);
  recv_regions_t(const recv_regions_t&) = delete;
  recv_regions_t& operator=(const recv_regions_t&) = delete;

  // Whether `status` (a recv completion) is an arrival into one of these
  // regions (its user_context names the region) rather than into a packet.
  static bool is_region_arrival(const backend::net_status_t& status) {
    return status.user_context != nullptr;
  }
  // An arrival of `status` has been handled: its bytes are no longer read.
  void release_arrival(const backend::net_status_t& status);
  // `status` has buffer_released: adds the count of messages the network
  // put in the region.
  void release_posting(const backend::net_status_t& status);
  // Posts every region marked for posting; false when none was posted. A
  // region the network refuses (retry) stays marked; *refused_nomem is set
  // when the refusal was retry_nomem (the network is out of room for a
  // receive, not busy), else left alone. Throws what post_recv_multi
  // throws.
  bool post_ready(backend::net_device_t& net, bool* refused_nomem);

 private:
  struct region_t {
    std::unique_ptr<std::byte[]> bytes;
    // See the top of this file. acq_rel on every change: the handlers'
    // reads of the bytes happen before the change that finishes the
    // region, hence before its next posting (a release sequence on one
    // atomic).
    util::atomic<std::int64_t> balance{0};
    // Set (release) by the call that finished the region, cleared by the
    // poster (acquire, pairing with it).
    util::atomic<bool> ready{true};
  };
  // The region a completion's user_context names (asserted to be one).
  region_t& region_of(const backend::net_status_t& status);
  void finish(region_t& region);

  const std::size_t region_bytes_;
  std::vector<region_t> regions_;
  // Regions marked ready: lets post_ready() skip the scan with one load.
  // relaxed: a hint; the flags decide.
  util::atomic<std::size_t> ready_count_;
};

}  // namespace lci::detail
