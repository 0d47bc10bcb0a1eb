// Stress of sync_impl_t: 4 signalling threads against one waiter over many
// rounds, threshold 1 (the flag) and 64 (the slot array). Every round the
// waiter must receive each status of the round exactly once; a round's
// signals start only after the waiter's test() ended the previous round
// (the synchronizer's contract), which the waiter publishes in `round`.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "lci/comp/sync.hpp"
#include "tests/comp/comp_test_scale.hpp"

namespace {

using lci::status_t;
using lci::detail::sync_impl_t;

constexpr int signallers_count = 4;

// The tag of signal `index` of round `round`.
lci::tag_t tag_of(int round, int index, int threshold) {
  return static_cast<lci::tag_t>(round) * static_cast<lci::tag_t>(threshold) +
         static_cast<lci::tag_t>(index);
}

// acquire: pairs with the waiter's release of `round`.
void wait_for_round(const std::atomic<int>& round, int expected) {
  while (round.load(std::memory_order_acquire) < expected) {
    std::this_thread::yield();
  }
}

// threshold 64: each signaller sends threshold / 4 statuses a round.
TEST(SyncStressTest, SlotArrayDeliversEveryStatusOnceEveryRound) {
  constexpr int threshold = 64;
  constexpr int per_signaller = threshold / signallers_count;
  const int rounds = lci::comp::test::scaled(2000);
  sync_impl_t sync(threshold);
  std::atomic<int> round{0};
  std::vector<std::thread> signallers;
  for (int s = 0; s < signallers_count; ++s) {
    signallers.emplace_back([&, s] {
      for (int r = 0; r < rounds; ++r) {
        wait_for_round(round, r);
        for (int k = 0; k < per_signaller; ++k) {
          status_t status(lci::errorcode_t::done);
          status.tag = tag_of(r, s * per_signaller + k, threshold);
          status.rank = s;
          sync.signal(status);
        }
      }
    });
  }
  std::vector<status_t> out(threshold);
  std::uint64_t bad_rounds = 0;
  for (int r = 0; r < rounds; ++r) {
    while (!sync.test(out.data())) std::this_thread::yield();
    std::vector<int> seen(threshold, 0);
    bool good = true;
    for (const status_t& status : out) {
      const lci::tag_t first = tag_of(r, 0, threshold);
      if (status.tag < first || status.tag >= first + threshold) {
        good = false;
        continue;
      }
      const int index = static_cast<int>(status.tag - first);
      good &= status.rank == index / per_signaller;
      ++seen[index];
    }
    for (int times : seen) good &= times == 1;
    if (!good) ++bad_rounds;
    EXPECT_FALSE(sync.test(nullptr)) << "round " << r << " did not re-arm";
    round.store(r + 1, std::memory_order_release);
  }
  for (auto& thread : signallers) thread.join();
  EXPECT_EQ(bad_rounds, 0u) << "rounds with a status missing or duplicated";
}

// threshold 1: the four threads race for each round's single signal.
TEST(SyncStressTest, FlagDeliversTheRoundsOneStatus) {
  const int rounds = lci::comp::test::scaled(20000);
  sync_impl_t sync(1);
  std::atomic<int> round{0};
  std::atomic<int> claimed{0};  // rounds whose signal a thread has claimed
  std::vector<int> signalled_by(rounds, -1);
  std::vector<std::thread> signallers;
  for (int s = 0; s < signallers_count; ++s) {
    signallers.emplace_back([&, s] {
      for (;;) {
        int r = claimed.load(std::memory_order_relaxed);
        if (r >= rounds) return;
        wait_for_round(round, r);
        if (!claimed.compare_exchange_strong(r, r + 1,
                                             std::memory_order_relaxed)) {
          continue;
        }
        signalled_by[r] = s;
        status_t status(lci::errorcode_t::done);
        status.tag = static_cast<lci::tag_t>(r);
        status.rank = s;
        sync.signal(status);
      }
    });
  }
  std::uint64_t bad_rounds = 0;
  for (int r = 0; r < rounds; ++r) {
    status_t out;
    while (!sync.test(&out)) std::this_thread::yield();
    // signalled_by[r] was written before the signal that test() acquired.
    if (out.tag != static_cast<lci::tag_t>(r) || out.rank != signalled_by[r]) {
      ++bad_rounds;
    }
    round.store(r + 1, std::memory_order_release);
  }
  for (auto& thread : signallers) thread.join();
  EXPECT_EQ(bad_rounds, 0u);
  EXPECT_FALSE(sync.test(nullptr));
}

}  // namespace
