#include "lci/runtime/device_backlog.hpp"

#include <cstddef>
#include <optional>
#include <utility>

#include "lci/util/assert.hpp"

namespace lci::detail {

device_backlog_t::device_backlog_t(std::size_t steps_max) : queue_(steps_max) {
  // The count sits on a line of its own, away from the queue's lock and
  // flag, which every push and drain touch too.
  static_assert(offsetof(device_backlog_t, steps_) % util::cache_line_bytes == 0 &&
                    offsetof(device_backlog_t, steps_) >= sizeof(queue_),
                "a backlog's step count shares a cache line with its queue");
}

device_backlog_t::~device_backlog_t() {
  while (queue_.pop()) {
  }
}

error_t device_backlog_t::push(backlog_step_t step) {
  // relaxed: the poster's own later drained() is ordered after this by
  // program order; another thread cannot know of the step before it runs.
  // Counted before the push so a progress call that pops and finishes it
  // at once never takes the count below zero.
  steps_.fetch_add(1, util::mo_relaxed);
  queue_.push(step);
  return errorcode_t::posted_backlog;
}

bool device_backlog_t::drain_steps() {
  bool progressed = false;
  // Every step queued now gets one try, not only those before the first
  // refusal: a step may wait for what a step behind it holds (an arrival
  // waiting for a packet, behind it the store of a message that holds the
  // last one into the matching table, where only a receive can free it).
  // Stopping at the first refusal let such a backlog wait forever
  // (//tests/runtime:incast_test). Bounded by the count taken here: steps
  // queued meanwhile, and those that go back, wait for the next call.
  for (std::size_t tries = queue_.size(); tries > 0; --tries) {
    std::optional<backlog_step_t> step = queue_.pop();
    if (!step) break;  // another thread took the rest
    error_t error;
    try {
      error = (*step)();
    } catch (...) {
      finish_step();  // dropped: the exception is its report
      throw;
    }
    if (error.is_retry()) {
      // Still refused: back in the queue at its tail (protocol steps of
      // different operations do not depend on each other's order).
      queue_.push(std::move(*step));
      continue;
    }
    finish_step();
    progressed = true;
  }
  return progressed;
}

void device_backlog_t::finish_step() {
  // release: pairs with the acquire in steps_left() (and so in the
  // device's drained()); what the step did (the request it put in flight,
  // its reads of the caller's buffer) happens before a caller told
  // "drained" reuses anything.
  const std::int64_t before = steps_.fetch_sub(1, util::mo_release);
  LCI_ASSERT(before >= 1, "backlog steps went negative");
}

}  // namespace lci::detail
