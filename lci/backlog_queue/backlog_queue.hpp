// backlog_queue_t<T>: requests that could not be submitted and cannot be
// handed back to the user as retry (paper §4.1.5), e.g. a rendezvous
// handshake the progress engine must send while the network send queue is
// full. Expected to be empty almost always, so the design optimises the
// empty poll: one load of an atomic flag, no lock, no shared write.
//
// Thread safety: every method may run concurrently with every other.
// Blocking:      is_empty_hint() never blocks; push() and pop() take a
//                spinlock for a bounded copy (never while the flag says
//                empty, for pop()).
// Ownership:     push() copies the request in; pop() moves it out to the
//                caller, who then owns it.
// Allocation:    the ring of entries_max slots at construction; past that,
//                a push onto a full ring doubles it (under the lock).
// Limits:        none: push() never refuses. What is queued is a step that
//                progress cannot hand back to anyone (a refused handshake,
//                an arrival waiting for a packet), so a full ring must not
//                fail it; entries_max is how many wait without allocating.
//                The caller bounds what it queues (docs/design/device.md,
//                "Pools").
// Order:         FIFO, across growth too.
// Linearization points: push() and pop() inside the lock; an empty pop()
// that returns without the lock linearizes at its flag load [F].
// Design notes: docs/design/backlog_queue.md.
#pragma once

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::backlog_queue {

template <typename T>
class backlog_queue_t {
 public:
  explicit backlog_queue_t(std::size_t entries_max) : ring_(entries_max) {
    LCI_ASSERT(entries_max > 0, "a backlog queue needs room for one entry");
  }

  ~backlog_queue_t() {
    // Teardown with work still queued would silently drop requests.
    LCI_ASSERT(count_ == 0, "backlog queue destroyed while not empty");
  }

  backlog_queue_t(const backlog_queue_t&) = delete;
  backlog_queue_t& operator=(const backlog_queue_t&) = delete;

  void push(const T& request) {
    util::spinlock_guard_t guard(lock_);
    if (count_ == ring_.size()) grow();
    ring_[(head_index_ + count_) % ring_.size()] = request;
    ++count_;
    // relaxed: the flag is only a hint; the entry itself is handed over
    // under lock_, whose acquire/release orders it for the popper.
    nonempty_.store(true, util::mo_relaxed);
  }

  // The oldest request, or nothing if the queue is empty.
  [[nodiscard]] std::optional<T> pop() {
    if (is_empty_hint()) return std::nullopt;
    util::spinlock_guard_t guard(lock_);
    // Re-check under the lock: another poller may have taken the last entry
    // between our flag load and the lock.
    if (count_ == 0 && !util::mutated("backlog_queue_no_recheck")) {
      return std::nullopt;
    }
    std::optional<T> request(std::move(ring_[head_index_]));
    head_index_ = (head_index_ + 1) % ring_.size();
    --count_;
    // relaxed: written under lock_, as in push(). Cleared only when the ring
    // is empty: clearing it earlier would hide the remaining entries from
    // every poller until the next push.
    if (count_ == 0 || util::mutated("backlog_queue_flag_cleared_early")) {
      nonempty_.store(false, util::mo_relaxed);
    }
    return request;
  }

  // Hands every queued request, oldest first, to fn(T&&) and empties the
  // queue, whatever the flag says; returns how many there were. For teardown
  // (a device retries or reports what is left). fn runs under the lock: it
  // must be short and must not touch this queue.
  template <typename Fn>
  std::size_t drain(Fn&& fn) {
    util::spinlock_guard_t guard(lock_);
    const std::size_t drained_count = count_;
    for (; count_ > 0; --count_) {
      fn(std::move(ring_[head_index_]));
      head_index_ = (head_index_ + 1) % ring_.size();
    }
    nonempty_.store(false, util::mo_relaxed);  // relaxed: as in pop()
    return drained_count;
  }

  // True when the queue was empty at the load; the cheap check progress
  // makes on every call.
  bool is_empty_hint() const {
    // relaxed: a hint (see push()); pop() re-checks under the lock. [F]
    return !nonempty_.load(util::mo_relaxed);
  }

  // Exact only while no push()/pop() runs concurrently.
  std::size_t size() const {
    util::spinlock_guard_t guard(lock_);
    return count_;
  }

  // Slots of the ring now: entries_max until a push found it full.
  std::size_t capacity() const {
    util::spinlock_guard_t guard(lock_);
    return ring_.size();
  }

 private:
  // Under lock_, on a full ring: twice the slots, the entries moved to the
  // front oldest first, so the ring's order is the queue's.
  void grow() {
    std::vector<T> wider(2 * ring_.size());
    // Equivalent mutants: bound. One more lap moves the oldest entry's
    // moved-from slot to wider[count_], the slot the push that called grow()
    // writes next (tools/mutate_records/2026-11-28-runs-35-59.md, run 59).
    for (std::size_t i = 0; i < count_; ++i) {
      // (Broken variant, tests/backlog_queue: copy the slots as they lie,
      // not from the oldest entry on, which reorders a wrapped ring.)
      const std::size_t from =
          util::mutated("backlog_queue_grow_unwrapped") ? i : (head_index_ + i) % ring_.size();
      wider[i] = std::move(ring_[from]);
    }
    ring_.swap(wider);
    head_index_ = 0;
  }

  // The flag is read by every progress call on every thread; keep the
  // lock (written by pushers and poppers) off its cache line.
  alignas(util::cache_line_bytes) util::atomic<bool> nonempty_{false};
  alignas(util::cache_line_bytes) mutable util::spinlock_t lock_;
  std::size_t head_index_ = 0;  // guarded by lock_
  std::size_t count_ = 0;       // guarded by lock_
  std::vector<T> ring_;         // guarded by lock_; grown by push() only
};

}  // namespace lci::backlog_queue
