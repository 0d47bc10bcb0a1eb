#include "sim/sim_context.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lci/util/assert.hpp"
#include "sim/sim_device.hpp"
#include "sim/sim_scheduler.hpp"

namespace lci::sim {

namespace {

// Queue depths a device may ask for (the sim allocates them up front).
constexpr std::size_t queue_depth_max = 1 << 16;
// multi_recv_min_free of a device whose caller asked for 0: a message size
// that eager protocols stay under (one packet), so a buffer is released
// once a packet may no longer fit.
constexpr std::size_t multi_recv_min_free_default = 8192;

std::size_t pick(std::size_t requested, std::size_t fallback, std::size_t cap) {
  return std::min(requested != 0 ? requested : fallback, cap);
}

}  // namespace

sim_context_t::sim_context_t(world_t& world, int rank) : world_(world), rank_(rank) {
  LCI_ASSERT(rank >= 0, "rank below 0");
  LCI_ASSERT(rank < world.ranks_count(), "rank beyond the world");
}

backend::net_device_attr_t sim_context_t::device_defaults() const {
  const world_options_t& options = world_.options();
  backend::net_device_attr_t attr;
  attr.net_max_sends = options.net_max_sends;
  attr.net_max_recvs = options.net_max_recvs;
  attr.net_max_cqes = options.net_max_cqes;
  return attr;
}

std::unique_ptr<backend::net_device_t> sim_context_t::alloc_device(
    const backend::net_device_attr_t& requested) {
  scheduler_t::wait("net alloc_device");  // a scheduling point, outside the lock
  if (world_.is_crashed(rank_)) throw rank_crashed_t(rank_);
  if (world_.run_aborted()) throw run_aborted_t();
  const world_options_t& options = world_.options();
  backend::net_device_attr_t attr;
  attr.max_msg_size = pick(requested.max_msg_size, options.max_msg_size, options.max_msg_size);
  attr.inject_size_max =
      pick(requested.inject_size_max, options.inject_size_max, options.inject_size_max);
  attr.supports_put_imm = true;
  attr.requires_local_mr = options.requires_local_mr;
  attr.registrations_max = options.registrations_max;
  attr.net_max_sends = pick(requested.net_max_sends, options.net_max_sends, queue_depth_max);
  attr.net_max_recvs = pick(requested.net_max_recvs, options.net_max_recvs, queue_depth_max);
  attr.net_max_cqes = pick(requested.net_max_cqes, options.net_max_cqes, queue_depth_max);
  attr.supports_multi_recv = requested.supports_multi_recv && options.multi_recv;
  // No message is over max_msg_size, so no larger min_free is needed.
  attr.multi_recv_min_free = attr.supports_multi_recv
                                 ? pick(requested.multi_recv_min_free,
                                        multi_recv_min_free_default, attr.max_msg_size)
                                 : 0;
  resolve_profile_attr(options.profile, &attr);  // the provider's caps (sim_profile.hpp)
  std::uint32_t index;
  {
    util::spinlock_guard_t guard(lock_);
    index = devices_count_;
    if (index < options.devices_per_rank_max) ++devices_count_;
  }
  if (index >= options.devices_per_rank_max) {
    throw std::length_error("alloc_device: rank " + std::to_string(rank_) + " already has " +
                            std::to_string(index) + " devices (devices_per_rank_max)");
  }
  detail::port_t* port = world_.open_port(rank_, index, attr);
  world_.note_progress();
  return std::make_unique<sim_device_t>(world_, port);
}

}  // namespace lci::sim
