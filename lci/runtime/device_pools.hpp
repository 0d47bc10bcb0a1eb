// device_pools_t: the pools of records a device's data path takes and
// gives back (requests, unexpected-message records, deferred posts), and
// the bound of its backlog.
//
// Thread safety: every method may run concurrently (lock-free pools; the
//                records allocated past a bound are listed under a
//                spinlock).
// Blocking:      never, but for that spinlock's few stores.
// Ownership:     owned by the runtime, not the device (see below).
// Allocation:    the pools at construction; past `unexpected`'s bound, a
//                record per unexpected message (take_unexpected).
// Limits:        each pool's bound; an empty pool is nullptr (the caller's
//                retry, or a backlogged arrival), but for `unexpected`.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lci/runtime/post_args.hpp"
#include "lci/runtime/request.hpp"
#include "lci/util/object_pool.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::detail {

// The records a device's data path takes and gives back, each pool bounded
// at the device's allocation (runtime_impl_t::alloc_device). The runtime
// owns them, not the device: a record may outlive its device (an
// unexpected message in a matching engine the runtime shares, a receive
// dropped with its device), and is then given back to a pool still there.
//
// Records for unexpected messages are the one pool an arrival never finds
// empty: past `unexpected`'s bound, take_unexpected() allocates a record
// (docs/design/device.md, "Pools"). An arrival cannot be refused, and
// waiting for a record cost as much memory in the backlog while no receive
// could find it; what bounds those records is what bounds the arrivals
// (the packets holding eager messages, the senders' requests behind RTSs).
// Records allocated so are listed until given back, so that the pools'
// destruction frees those of messages nobody received.
struct device_pools_t {
  device_pools_t(std::size_t requests_max, std::size_t unexpected_max,
                 std::size_t deferred_posts_max, std::size_t backlog_steps_max)
      : requests(requests_max),
        unexpected(unexpected_max),
        deferred_posts(deferred_posts_max),
        backlog_steps_max(backlog_steps_max) {}
  ~device_pools_t();
  device_pools_t(const device_pools_t&) = delete;
  device_pools_t& operator=(const device_pools_t&) = delete;

  // A record from `unexpected`, or past its bound an allocated one; never
  // nullptr. Any thread.
  [[nodiscard]] unexpected_t* take_unexpected() {
    unexpected_t* message = unexpected.take();
    return message != nullptr ? message : allocate_unexpected();
  }
  // `message` (from take_unexpected) back where it came from. Any thread.
  void give_back(unexpected_t* message) {
    if (unexpected.owns(message)) {
      unexpected.give_back(message);
    } else {
      free_unexpected(message);
    }
  }
  // Diagnostics for tests: records ever allocated past the bound, and those
  // still out.
  std::uint64_t unexpected_allocated_total() const;
  std::size_t unexpected_allocated_count() const;
  // No record of any pool is out. Only once the device is gone (nothing
  // takes any more): a record given back meanwhile is pushed onto a free
  // list the walk started below, so the answer errs towards "out".
  bool all_home() const;

  util::object_pool_t<request_t> requests;
  util::object_pool_t<unexpected_t> unexpected;
  util::object_pool_t<deferred_post_t> deferred_posts;
  // Steps the device's backlog holds without allocating (it grows past
  // that: device_backlog_t::run_or_backlog).
  const std::size_t backlog_steps_max;

 private:
  // A record past the bound, linked while out. `record` comes first, so a
  // record's address is its node's (both are standard layout).
  struct allocated_unexpected_t {
    unexpected_t record;
    allocated_unexpected_t* prev = nullptr;
    allocated_unexpected_t* next = nullptr;
  };
  unexpected_t* allocate_unexpected();
  void free_unexpected(unexpected_t* message);

  mutable util::spinlock_t allocated_lock_;
  allocated_unexpected_t* allocated_head_ = nullptr;  // guarded by allocated_lock_
  std::size_t allocated_count_ = 0;                   // guarded by allocated_lock_
  std::uint64_t allocated_total_ = 0;                 // guarded by allocated_lock_
};

}  // namespace lci::detail
