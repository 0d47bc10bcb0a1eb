// sim_context_t: one rank's view of a world_t (backends/backend.hpp's
// net_context_t). alloc_device is collective by order: the k-th device a
// rank allocates talks to the k-th device of every other rank; a message
// that arrives before the target rank allocated its k-th device waits for it.
//
// Thread safety: all methods may run concurrently; alloc_device serialises
//                on a lock, so two threads of one rank allocating at once
//                get distinct indices in lock order (pairing across ranks
//                then depends on that order: allocate from one thread per
//                rank, or order the calls).
// Blocking:      never. Ownership: the world owns what a device uses; the
//                returned handle closes it. Allocation: at alloc_device.
// Limits:        devices_per_rank_max devices per rank: beyond it
//                alloc_device throws std::length_error naming the limit.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/backend.hpp"
#include "lci/util/spinlock.hpp"
#include "sim/sim_world.hpp"

namespace lci::sim {

class sim_context_t final : public backend::net_context_t {
 public:
  sim_context_t(world_t& world, int rank);
  int rank_me() const override { return rank_; }
  int rank_n() const override { return world_.ranks_count(); }
  // Fields of `requested` left 0 take the world's defaults; supports_put_imm
  // is always true; inject_size_max and max_msg_size are capped by the world.
  std::unique_ptr<backend::net_device_t> alloc_device(
      const backend::net_device_attr_t& requested) override;
  bool supports_put_imm() const override { return true; }
  // The world's queue depths (alloc_device takes them for a request of 0).
  backend::net_device_attr_t device_defaults() const override;
  world_t& world() const { return world_; }

 private:
  world_t& world_;
  const int rank_;
  util::spinlock_t lock_;
  std::uint32_t devices_count_ = 0;  // under lock_
};

}  // namespace lci::sim
