#include "lci/backlog_queue/backlog_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace {

using lci::backlog_queue::backlog_queue_t;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int scale = 4;
#else
constexpr int scale = 1;
#endif

TEST(BacklogQueue, EmptyPollReturnsNothing) {
  backlog_queue_t<int> queue(4);
  EXPECT_TRUE(queue.is_empty_hint());
  EXPECT_FALSE(queue.pop().has_value());
  EXPECT_EQ(queue.size(), 0u);
}

TEST(BacklogQueue, FifoAndFlagFollowContents) {
  backlog_queue_t<int> queue(4);
  queue.push(1);
  EXPECT_FALSE(queue.is_empty_hint());
  queue.push(2);
  EXPECT_EQ(queue.pop().value(), 1);
  EXPECT_FALSE(queue.is_empty_hint());
  EXPECT_EQ(queue.pop().value(), 2);
  EXPECT_TRUE(queue.is_empty_hint());  // cleared by the pop that emptied it
  EXPECT_FALSE(queue.pop().has_value());
}

// A full ring doubles and keeps the queue's order, also when its entries
// wrapped around the end of the ring (the oldest is not in slot 0).
TEST(BacklogQueue, FullRingGrowsAndKeepsOrder) {
  backlog_queue_t<int> queue(3);
  queue.push(0);
  queue.push(1);
  EXPECT_EQ(queue.pop().value(), 0);
  for (int i = 2; i <= 3; ++i) queue.push(i);  // 1, 2, 3: wrapped, full
  EXPECT_EQ(queue.capacity(), 3u);
  for (int i = 4; i <= 9; ++i) queue.push(i);  // grows twice: 6, then 12
  EXPECT_EQ(queue.capacity(), 12u);
  EXPECT_EQ(queue.size(), 9u);
  for (int i = 1; i <= 9; ++i) EXPECT_EQ(queue.pop().value(), i);
  EXPECT_FALSE(queue.pop().has_value());
  EXPECT_TRUE(queue.is_empty_hint());
}

TEST(BacklogQueue, WrapsAroundManyTimes) {
  backlog_queue_t<int> queue(3);
  int next_push = 0;
  int next_pop = 0;
  for (int round = 0; round < 100; ++round) {
    queue.push(next_push++);
    queue.push(next_push++);
    EXPECT_EQ(queue.pop().value(), next_pop++);
    EXPECT_EQ(queue.pop().value(), next_pop++);
  }
  EXPECT_TRUE(queue.is_empty_hint());
}

TEST(BacklogQueue, DrainTakesEverythingInOrder) {
  backlog_queue_t<int> queue(4);
  for (int i = 0; i < 3; ++i) queue.push(i);
  (void)queue.pop();
  std::vector<int> drained;
  EXPECT_EQ(queue.drain([&](int request) { drained.push_back(request); }), 2u);
  EXPECT_EQ(drained, (std::vector<int>{1, 2}));
  EXPECT_TRUE(queue.is_empty_hint());
  EXPECT_EQ(queue.size(), 0u);
  EXPECT_EQ(queue.drain([](int) { FAIL() << "queue was empty"; }), 0u);
}

TEST(BacklogQueue, DestroyWhileNotEmptyAborts) {
  EXPECT_DEATH(
      {
        backlog_queue_t<int> queue(2);
        queue.push(1);
      },
      "backlog queue destroyed while not empty");
}

// Producers push unique values (the 16-slot ring grows while they outrun
// the consumers), consumers poll; every value comes out exactly once, and
// each producer's values come out in the order pushed as seen by any one
// consumer.
TEST(BacklogQueueStress, EveryRequestPoppedExactlyOnce) {
  constexpr int producers_count = 3;
  constexpr int consumers_count = 3;
  const std::uint32_t pushes_per_producer = 40000 / scale;
  auto queue = std::make_unique<backlog_queue_t<std::uint64_t>>(16);
  std::vector<std::atomic<int>> seen(producers_count * pushes_per_producer);
  std::atomic<std::uint64_t> popped_count{0};
  std::atomic<long> order_violations{0};
  const std::uint64_t total = std::uint64_t{producers_count} * pushes_per_producer;
  std::vector<std::thread> threads;
  for (int p = 0; p < producers_count; ++p) {
    threads.emplace_back([&, p] {
      for (std::uint32_t i = 0; i < pushes_per_producer; ++i) {
        queue->push((std::uint64_t(p) << 32) | i);
      }
    });
  }
  for (int c = 0; c < consumers_count; ++c) {
    threads.emplace_back([&] {
      std::vector<std::int64_t> last_from(producers_count, -1);
      while (popped_count.load() < total) {
        const auto value = queue->pop();
        if (!value) continue;
        const int producer = static_cast<int>(*value >> 32);
        const std::int64_t index = static_cast<std::uint32_t>(*value);
        if (index <= last_from[producer]) order_violations.fetch_add(1);
        last_from[producer] = index;
        seen[producer * pushes_per_producer + index].fetch_add(1);
        popped_count.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(order_violations.load(), 0);
  EXPECT_TRUE(queue->is_empty_hint());
  for (std::size_t i = 0; i < seen.size(); ++i) ASSERT_EQ(seen[i].load(), 1) << i;
}

}  // namespace
