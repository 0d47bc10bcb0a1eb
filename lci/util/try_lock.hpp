// Try-lock wrappers (paper §4.2.2): network stacks guard their queues with
// spinlocks they acquire blockingly. LCI guards each such resource with its
// own spinlock_t and only try_locks it, so contention becomes a retry result
// the caller can act on (do other work, progress another device) instead of
// a hidden spin.
//
// Thread safety: as spinlock_t. Blocking: never, unless a guard is given a
// bounded wait (spinlock_t::try_lock_waiting) or told to wait
// (spinlock_t::lock). Allocation: none.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "lci/util/error.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::util {

// Holds `lock` for its lifetime if it was free at construction.
class try_lock_guard_t {
 public:
  explicit try_lock_guard_t(spinlock_t& lock)
      : lock_(lock), owns_(lock.try_lock()) {}
  // Waits up to `pauses_max` PAUSEs for a held lock first.
  try_lock_guard_t(spinlock_t& lock, std::uint32_t pauses_max)
      : lock_(lock), owns_(lock.try_lock_waiting(pauses_max)) {}
  // With `wait`, waits for the lock instead (always owns it): for
  // resources whose users choose per kind of call whether contention is a
  // retry or a wait (the ofi device's ofi_lock_mode).
  try_lock_guard_t(spinlock_t& lock, std::uint32_t pauses_max, bool wait)
      : lock_(lock), owns_(wait ? (lock.lock(), true) : lock.try_lock_waiting(pauses_max)) {}
  ~try_lock_guard_t() {
    if (owns_) lock_.unlock();
  }
  try_lock_guard_t(const try_lock_guard_t&) = delete;
  try_lock_guard_t& operator=(const try_lock_guard_t&) = delete;

  bool owns_lock() const { return owns_; }

 private:
  spinlock_t& lock_;
  const bool owns_;
};

// Runs fn() under `lock` if the lock is free right now and returns its error_t;
// otherwise returns retry_lock without running fn.
template <typename Fn>
[[nodiscard]] error_t try_locked(spinlock_t& lock, Fn&& fn) {
  static_assert(std::is_convertible_v<std::invoke_result_t<Fn>, error_t>,
                "fn must return an error_t");
  try_lock_guard_t guard(lock);
  if (!guard.owns_lock()) return errorcode_t::retry_lock;
  return std::forward<Fn>(fn)();
}

}  // namespace lci::util
