// LCT_tbarrier_*: no thread leaves a round before every thread entered it,
// and each thread sees the others' writes from before the round.
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lct.h"

namespace {

TEST(LctTbarrier, RoundsSeparateWrites) {
  constexpr int threads_count = 4, rounds_count = 200;
  LCT_tbarrier_t barrier = LCT_tbarrier_alloc(threads_count);
  // Plain ints: only the barrier orders their accesses (TSan checks that).
  std::vector<int> round_of(threads_count, -1);
  std::atomic<int> mismatches_count{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < rounds_count; ++round) {
        round_of[t] = round;
        LCT_tbarrier_arrive_and_wait(barrier);
        for (int other = 0; other < threads_count; ++other)
          if (round_of[other] != round) mismatches_count.fetch_add(1);
        // The second barrier keeps a fast thread from writing the next
        // round's value while a slow one still reads this round's.
        const int64_t ticket = LCT_tbarrier_arrive(barrier);
        while (!LCT_tbarrier_test(barrier, ticket)) std::this_thread::yield();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches_count.load(), 0);
  LCT_tbarrier_free(&barrier);
  EXPECT_EQ(barrier, nullptr);
}

TEST(LctTbarrier, IncompleteRoundTestsFalse) {
  constexpr int threads_count = 3;
  LCT_tbarrier_t barrier = LCT_tbarrier_alloc(threads_count);
  std::vector<int64_t> tickets;
  for (int t = 0; t < threads_count - 1; ++t) {
    tickets.push_back(LCT_tbarrier_arrive(barrier));
    for (int64_t ticket : tickets) EXPECT_FALSE(LCT_tbarrier_test(barrier, ticket));
  }
  tickets.push_back(LCT_tbarrier_arrive(barrier));
  for (int64_t ticket : tickets) EXPECT_TRUE(LCT_tbarrier_test(barrier, ticket));
  // The next round starts incomplete; the finished one stays complete.
  const int64_t next = LCT_tbarrier_arrive(barrier);
  EXPECT_FALSE(LCT_tbarrier_test(barrier, next));
  EXPECT_TRUE(LCT_tbarrier_test(barrier, tickets[0]));
  LCT_tbarrier_free(&barrier);
}

}  // namespace
