#include "lci/protocol/arrival.hpp"

#include <cstring>

#include "lci/runtime/device_impl.hpp"

namespace lci::detail {

bool arrival_t::in_region() const { return recv_regions_t::is_region_arrival(status_); }

arrival_t::kept_t arrival_t::keep(const std::byte* data, std::size_t size) {
  LCI_ASSERT(held_, "keeping an arrival already released");
  if (!in_region()) {
    held_ = false;  // the packet is the keeper's now
    return {status_.buffer, data};
  }
  void* packet = device_.packet_pool()->pool.get();
  if (packet == nullptr) return {nullptr, nullptr};
  LCI_ASSERT(size <= device_.packet_payload_max(), "an arrival over a packet");
  if (size > 0) std::memcpy(packet, data, size);
  release();
  return {packet, static_cast<const std::byte*>(packet)};
}

void arrival_t::release() {
  if (!held_) return;
  held_ = false;
  device_.receives().release_arrival(status_);
}

}  // namespace lci::detail
