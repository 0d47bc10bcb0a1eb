// device_backlog_t: a device's backlog (paper §4.1.5): the protocol steps
// that found the network busy and cannot be handed back to anyone as
// retry (an RTR, a FIN, a store into a full matching table, an arrival that
// waits for a packet or a request), with the count of those not finished
// yet, which the device's drained() asks.
//
// Thread safety: every method may run concurrently with every other: posts
//                and progress calls of any threads push and drain (the
//                queue has its own lock; the count is atomic).
// Blocking:      never, but for a step's own code (which must not block).
// Ownership:     owned by its device; a queued step owns copies of its
//                arguments, never what they point to.
// Allocation:    the queue's ring of device_pools_t::backlog_steps_max
//                steps at construction; past that a push doubles it (the
//                Pools table in docs/design/device.md says what bounds it).
// Limits:        none: push() never refuses (see run_or_backlog()).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lci/backlog_queue/backlog_queue.hpp"
#include "lci/runtime/backlog_step.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/error.hpp"

namespace lci::detail {

class device_backlog_t {
 public:
  explicit device_backlog_t(std::size_t steps_max);
  // Drops what is still queued: only once nothing runs on the device
  // (drain_before_close emptied it, or a device that never ran a step).
  ~device_backlog_t();
  device_backlog_t(const device_backlog_t&) = delete;
  device_backlog_t& operator=(const device_backlog_t&) = delete;

  // Runs `step` now; if it returns retry, queues it for progress(). Returns
  // done or posted_backlog. Never refuses the step: most callers are
  // progress itself, with nobody to hand a refusal to, so past steps_max
  // waiting steps the queue grows.
  template <typename Step>
  error_t run_or_backlog(const Step& step) {
    // A non-empty backlog goes first: steps keep their order behind it.
    if (queue_.is_empty_hint()) {
      const error_t error = step();
      if (!error.is_retry()) return error;
    }
    // Only a step that must wait is copied into a backlog_step_t.
    return push(backlog_step_t(step));
  }
  // progress() step 1: tries each queued step once, in order; true when one
  // finished.
  bool drain() {
    // relaxed: a step pushed meanwhile is left to the next progress call,
    // as it would be had it come a moment later.
    if (steps_.load(util::mo_relaxed) == 0) return false;
    return drain_steps();
  }
  // A protocol step waits in the queue or runs (drain_before_close in
  // lci/progress/progress.hpp progresses until none does; the device's
  // drained() asks first).
  bool steps_left() const {
    // acquire: pairs with the release in finish_step(): what the last step
    // did (the request it put in flight, its reads of the caller's buffer)
    // is seen by the caller told "none left".
    return steps_.load(util::mo_acquire) != 0;
  }

 private:
  // Queues a step the network refused; returns posted_backlog.
  error_t push(backlog_step_t step);
  bool drain_steps();  // drain() with steps waiting
  // A step popped from the queue finished (or threw): no longer counted.
  void finish_step();

  backlog_queue::backlog_queue_t<backlog_step_t> queue_;
  // Steps pushed and not yet finished, counting one that a progress call
  // popped and is running (the queue no longer holds it, yet it may still
  // read the caller's buffer or go back in): what steps_left() asks rather
  // than the queue's emptiness. On a line of its own: posting threads
  // (push) and progressing threads (finish_step) write it while others
  // read the queue's flag and lock.
  alignas(util::cache_line_bytes) util::atomic<std::int64_t> steps_{0};
};

}  // namespace lci::detail
