// spinlock_t: a one-byte test-and-test-and-set lock.
//
// Thread safety: lock/try_lock/unlock may run concurrently from any threads.
// Blocking:      lock() spins while another thread holds the lock; try_lock()
//                never waits; try_lock_waiting() waits a bounded number of
//                PAUSEs, never yielding. Critical sections guarded by it must be short
//                and must never block or yield (in the simulator a fiber that
//                yields under a spinlock would starve the fiber spinning on it).
// Allocation:    none. One byte, so it fits inside a matching-table bucket;
//                give it its own cache line where it is contended on its own.
// Progress:      lock() is deadlock-free but not starvation-free. Its loop has
//                no bound because it only spins while a holder is inside a
//                bounded critical section; callers that must not wait use
//                try_lock() (see try_lock.hpp).
// Held count:    each OS thread counts the spinlocks it holds
//                (spinlocks_held_by_this_thread()); the simulator's scheduler
//                checks it is zero at every fiber yield point. A lock must be
//                unlocked by the thread that locked it (true of all LCI code).
//                Cost: one thread-local add per lock and per unlock (~1 cycle
//                next to the ~20-cycle exchange); not counted under
//                LCI_MODEL_CHECK, where nobody reads it.
#pragma once

#include <cstdint>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/backoff.hpp"
#include "lci/util/mutation.hpp"

namespace lci::util {

namespace detail {
// Spinlocks the running OS thread holds. initial-exec: a fixed offset from
// the thread pointer even when this header is compiled into a shared object
// (LCI is never dlopen'ed), so no __tls_get_addr call on the lock path.
// The simulator saves/restores it around a failed fiber (sim_scheduler.cpp).
inline thread_local std::uint32_t spinlocks_held_count
    __attribute__((tls_model("initial-exec"))) = 0;
}  // namespace detail

// For the simulator's yield check and for assertions.
inline std::uint32_t spinlocks_held_by_this_thread() {
  return detail::spinlocks_held_count;
}

class spinlock_t {
 public:
  spinlock_t() : locked_(0) {}
  spinlock_t(const spinlock_t&) = delete;
  spinlock_t& operator=(const spinlock_t&) = delete;

  [[nodiscard]] bool try_lock() {
    // relaxed: a pre-check only, so a held lock costs a shared load instead
    // of a cache-line-stealing exchange; the exchange below decides.
    if (locked_.load(mo_relaxed) != 0) return false;
    // acquire: pairs with the release in unlock() [A], so the previous
    // holder's writes are visible inside our critical section.
    if (locked_.exchange(1, mo_acquire) != 0) return false;
    count_held(+1);
    return true;
  }

  // try_lock() that, finding the lock held, first waits up to `pauses_max`
  // PAUSEs for it to come free. Still a try (bounded, never yields): for a
  // caller whose holders are usually in and out within that time and whose
  // only other answer is a retry its own caller must come back for.
  [[nodiscard]] bool try_lock_waiting(std::uint32_t pauses_max) {
    // relaxed: as the pre-check in try_lock(); try_lock() decides.
    // Equivalent mutants: bound. One PAUSE more before the same try: the holder may let go
    // meanwhile, as a slightly slower holder's timing could equally decide; pauses_max tunes
    // a wait, it bounds nothing else (tools/mutate_records/2026-11-27-runs-05-28.md, run 13).
    for (std::uint32_t i = 0; i < pauses_max && locked_.load(mo_relaxed) != 0; ++i) {
      spin_pause();
    }
    return try_lock();
  }

  void lock() {
    while (!try_lock()) {
      // relaxed: wait on a shared copy of the line until it looks free.
      backoff_t backoff;
      while (locked_.load(mo_relaxed) != 0) backoff.pause();
    }
  }

  void unlock() {
    // relaxed: reading our own last write; assert we really hold it.
    LCI_ASSERT(locked_.load(mo_relaxed) == 1, "unlock of a free spinlock");
    // release: pairs with [A] in try_lock(), publishing the critical section.
    locked_.store(0, mutated("spinlock_relaxed_unlock") ? mo_relaxed : mo_release);
    count_held(-1);
  }

  // For assertions only: the answer is stale as soon as it is returned.
  bool is_locked() const { return locked_.load(mo_relaxed) != 0; }

 private:
  static void count_held(int delta) {
#if !defined(LCI_MODEL_CHECK)
    detail::spinlocks_held_count += static_cast<std::uint32_t>(delta);
#else
    (void)delta;
#endif
  }

  atomic<std::uint8_t> locked_;
};

// RAII holder for spinlock_t::lock(); the critical-section rules above apply.
class spinlock_guard_t {
 public:
  explicit spinlock_guard_t(spinlock_t& lock) : lock_(lock) { lock_.lock(); }
  ~spinlock_guard_t() { lock_.unlock(); }
  spinlock_guard_t(const spinlock_guard_t&) = delete;
  spinlock_guard_t& operator=(const spinlock_guard_t&) = delete;

 private:
  spinlock_t& lock_;
};

}  // namespace lci::util
