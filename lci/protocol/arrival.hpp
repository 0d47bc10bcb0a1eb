// arrival_t: one message that came in through the device's pre-posted
// receives — into a packet, or into a receive region (recv_regions.hpp) —
// and the duty to give its bytes back. A handler reads the bytes where they
// landed; what it must hold past its return (an unexpected message, a
// zero-copy active message) it moves into a packet with keep(). Whatever
// was not kept is released when the arrival_t goes away, also when a
// handler throws: the packet back to the pool, the region's hold let go.
//
// Thread safety: one thread (the one dispatching the completion).
// Ownership:     refers to the completion status, which must outlive it.
#pragma once

#include <cstddef>

#include "backends/backend.hpp"

namespace lci::detail {

class device_impl_t;

class arrival_t {
 public:
  arrival_t(device_impl_t& device, const backend::net_status_t& status)
      : device_(device), status_(status) {}
  ~arrival_t() { release(); }
  arrival_t(const arrival_t&) = delete;
  arrival_t& operator=(const arrival_t&) = delete;

  const backend::net_status_t& status() const { return status_; }

  // A packet the caller owns from now on, holding the bytes [data, data +
  // size) of this arrival at `data`: the arrival's own packet (nothing
  // moves), or, for an arrival in a receive region, a fresh one they are
  // copied into (at its start). {nullptr, nullptr} when that needs a packet
  // and the pool has none; the arrival is still held then.
  struct kept_t {
    void* packet;
    const std::byte* data;
  };
  kept_t keep(const std::byte* data, std::size_t size);
  // Gives the bytes back now (the destructor's job, done early).
  void release();
  // Leaves the bytes held after this object goes away: a copy of the status
  // will be handled later (device backlog) by another arrival_t.
  void detach() { held_ = false; }
  bool in_region() const;

 private:
  device_impl_t& device_;
  const backend::net_status_t& status_;
  bool held_ = true;
};

}  // namespace lci::detail
