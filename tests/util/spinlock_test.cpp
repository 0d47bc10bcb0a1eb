#include "lci/util/spinlock.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include "lci/util/try_lock.hpp"

namespace {

using lci::errorcode_t;
using lci::error_t;
using lci::util::spinlock_t;

TEST(Spinlock, TryLockFailsWhileHeld) {
  spinlock_t lock;
  EXPECT_FALSE(lock.is_locked());
  ASSERT_TRUE(lock.try_lock());
  EXPECT_TRUE(lock.is_locked());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
  EXPECT_FALSE(lock.is_locked());
  ASSERT_TRUE(lock.try_lock());
  lock.unlock();
}

TEST(Spinlock, UnlockOfFreeLockAborts) {
  spinlock_t lock;
  EXPECT_DEATH(lock.unlock(), "unlock of a free spinlock");
}

TEST(TryLock, ContentionBecomesRetryLock) {
  spinlock_t lock;
  int runs = 0;
  auto body = [&]() -> error_t {
    ++runs;
    return errorcode_t::done;
  };
  ASSERT_TRUE(lock.try_lock());
  const error_t busy = lci::util::try_locked(lock, body);
  EXPECT_EQ(busy.errorcode, errorcode_t::retry_lock);
  EXPECT_TRUE(busy.is_retry());
  EXPECT_EQ(runs, 0);
  lock.unlock();

  const error_t free = lci::util::try_locked(lock, body);
  EXPECT_EQ(free.errorcode, errorcode_t::done);
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(lock.is_locked());  // released after fn
}

// Bounded: a holder that stays makes try_lock_waiting give up, as try_lock.
TEST(Spinlock, TryLockWaitingGivesUpOnAHolderThatStays) {
  spinlock_t lock;
  ASSERT_TRUE(lock.try_lock());
  EXPECT_FALSE(lock.try_lock_waiting(1000));
  {
    lci::util::try_lock_guard_t guard(lock, 1000);
    EXPECT_FALSE(guard.owns_lock());
  }
  EXPECT_TRUE(lock.is_locked());  // the refused guard left the holder's lock
  lock.unlock();
  EXPECT_TRUE(lock.try_lock_waiting(0));  // free: taken at once
  lock.unlock();
}

// A holder that lets go while the waiter waits: the lock is taken, where a
// plain try_lock would have answered retry.
TEST(Spinlock, TryLockWaitingTakesALockReleasedMeanwhile) {
  spinlock_t lock;
  std::atomic<bool> held{false};
  std::thread holder([&] {
    ASSERT_TRUE(lock.try_lock());
    held.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    lock.unlock();
  });
  while (!held.load()) std::this_thread::yield();
  {
    lci::util::try_lock_guard_t guard(lock, std::numeric_limits<std::uint32_t>::max());
    EXPECT_TRUE(guard.owns_lock());
  }
  holder.join();
  EXPECT_FALSE(lock.is_locked());
}

// A guard told to try gives up on a held lock; told to wait, it takes the
// lock once its holder lets go, and releases it.
TEST(TryLock, GuardTriesOrWaits) {
  lci::util::spinlock_t lock;
  lock.lock();
  {
    lci::util::try_lock_guard_t tried(lock, 1000, /*wait=*/false);
    EXPECT_FALSE(tried.owns_lock());
  }
  std::atomic<bool> taken{false};
  std::thread waiter([&] {
    lci::util::try_lock_guard_t waited(lock, 0, /*wait=*/true);
    EXPECT_TRUE(waited.owns_lock());
    taken.store(true, std::memory_order_release);
  });
  // Most often the waiter is spinning by now (a guard that only tried
  // would give up); correct either way.
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(taken.load(std::memory_order_acquire));
  lock.unlock();
  waiter.join();
  EXPECT_TRUE(taken.load(std::memory_order_acquire));
  EXPECT_TRUE(lock.try_lock()) << "the waiting guard did not release the lock";
  lock.unlock();
}

TEST(TryLock, GuardReleasesOnlyWhatItOwns) {
  spinlock_t lock;
  {
    lci::util::try_lock_guard_t first(lock);
    ASSERT_TRUE(first.owns_lock());
    {
      lci::util::try_lock_guard_t second(lock);
      EXPECT_FALSE(second.owns_lock());
    }
    EXPECT_TRUE(lock.is_locked());  // second did not unlock first's lock
  }
  EXPECT_FALSE(lock.is_locked());
}

// Mutual exclusion: increments of a plain heap counter under the lock are
// never lost; under --config=tsan a broken lock is also reported as a race.
TEST(SpinlockStress, MutualExclusion) {
  constexpr int threads_count = 4;
  constexpr int increments_per_thread = 200000;
  spinlock_t lock;
  auto counter = std::make_unique<long>(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < increments_per_thread; ++i) {
        lci::util::spinlock_guard_t guard(lock);
        ++*counter;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(*counter, long{threads_count} * increments_per_thread);
}

// try_locked from many threads: every call either ran (done) or did nothing
// (retry_lock); the runs counted inside equal the done results outside.
TEST(TryLockStress, EveryCallRunsOrRetries) {
  constexpr int threads_count = 4;
  constexpr int calls_per_thread = 100000;
  spinlock_t lock;
  auto runs_inside = std::make_unique<long>(0);
  std::vector<long> done_outside(threads_count, 0);
  std::vector<long> retry_outside(threads_count, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < calls_per_thread; ++i) {
        const error_t result = lci::util::try_locked(lock, [&]() -> error_t {
          ++*runs_inside;
          return errorcode_t::done;
        });
        if (result.is_done()) {
          ++done_outside[t];
        } else {
          ASSERT_EQ(result.errorcode, errorcode_t::retry_lock);
          ++retry_outside[t];
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  long done_total = 0;
  long retry_total = 0;
  for (int t = 0; t < threads_count; ++t) {
    done_total += done_outside[t];
    retry_total += retry_outside[t];
  }
  EXPECT_EQ(done_total, *runs_inside);
  EXPECT_EQ(done_total + retry_total, long{threads_count} * calls_per_thread);
}

}  // namespace
