#include "lci/runtime/recv_regions.hpp"

#include "lci/util/assert.hpp"

namespace lci::detail {

recv_regions_t::recv_regions_t(std::size_t count, std::size_t region_bytes)
    : region_bytes_(region_bytes), regions_(count), ready_count_(count) {
  LCI_ASSERT(count > 0 && region_bytes > 0, "receive regions need a count and a size");
  for (region_t& region : regions_) region.bytes.reset(new std::byte[region_bytes]);
}

recv_regions_t::region_t& recv_regions_t::region_of(const backend::net_status_t& status) {
  auto* region = static_cast<region_t*>(status.user_context);
  LCI_ASSERT(region >= regions_.data() && region < regions_.data() + regions_.size(),
             "a completion names no receive region of this device");
  return *region;
}

void recv_regions_t::release_arrival(const backend::net_status_t& status) {
  region_t& region = region_of(status);
  // acq_rel: see region_t::balance. Old value 1: the release was added and
  // this was the last arrival still held.
  if (region.balance.fetch_sub(1, util::mo_acq_rel) == 1) finish(region);
}

void recv_regions_t::release_posting(const backend::net_status_t& status) {
  LCI_ASSERT(status.buffer_released, "a region released without the network's release");
  region_t& region = region_of(status);
  const auto messages = static_cast<std::int64_t>(status.buffer_messages);
  // acq_rel: see region_t::balance. Old value -messages: every arrival was
  // handled before the release came.
  if (region.balance.fetch_add(messages, util::mo_acq_rel) == -messages) finish(region);
}

void recv_regions_t::finish(region_t& region) {
  // release: pairs with the acquire exchange in post_ready(), which then
  // sees the balance change above (and the handlers' reads before it).
  region.ready.store(true, util::mo_release);
  ready_count_.fetch_add(1, util::mo_relaxed);  // relaxed: see ready_count_
}

bool recv_regions_t::post_ready(backend::net_device_t& net, bool* refused_nomem) {
  // relaxed: a region marked meanwhile is posted by the next call.
  if (ready_count_.load(util::mo_relaxed) == 0) return false;
  bool posted_any = false;
  for (region_t& region : regions_) {
    // acquire: pairs with finish(); exchange, so two posters never post
    // one region twice.
    if (!region.ready.exchange(false, util::mo_acquire)) continue;
    // The balance is 0 here (finished, or never posted): the new posting
    // starts counting from it.
    LCI_ASSERT(region.balance.load(util::mo_relaxed) == 0, "posting a region still in use");
    error_t error;
    try {
      error = net.post_recv_multi(region.bytes.get(), region_bytes_, &region);
    } catch (...) {
      region.ready.store(true, util::mo_relaxed);  // relaxed: this thread's own mark
      throw;
    }
    if (error.is_retry()) {
      region.ready.store(true, util::mo_relaxed);  // relaxed: as above
      if (error.errorcode == errorcode_t::retry_nomem) *refused_nomem = true;
      break;
    }
    ready_count_.fetch_sub(1, util::mo_relaxed);  // relaxed: see ready_count_
    posted_any = true;
  }
  return posted_any;
}

}  // namespace lci::detail
