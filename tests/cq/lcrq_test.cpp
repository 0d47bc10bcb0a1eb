#include "lci/cq/cq_lcrq.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <algorithm>
#include <deque>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "tests/cq/cq_stress.hpp"

namespace {

using lci::cq::lcrq_t;
using lci::cq::test::encode_value;
using lci::cq::test::run_mpmc_stress;
using lci::cq::test::stress_config_t;
using lci::cq::test::stress_scale_divisor;

void* as_value(std::uint64_t i) {
  return reinterpret_cast<void*>((i << 4) | 8);  // distinct and never null
}

TEST(Lcrq, EmptyPopReturnsNull) {
  lcrq_t queue;
  EXPECT_EQ(queue.pop(), nullptr);
  EXPECT_EQ(queue.pop(), nullptr);
  queue.push(as_value(1));
  EXPECT_EQ(queue.pop(), as_value(1));
  EXPECT_EQ(queue.pop(), nullptr);
}

// Many empty pops push head far past tail (fix_state must pull tail up);
// values pushed afterwards must still come out, in order.
TEST(Lcrq, EmptyPopsThenPushesKeepOrder) {
  lcrq_t queue(8);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(queue.pop(), nullptr);
  for (std::uint64_t i = 0; i < 20; ++i) queue.push(as_value(i));
  for (std::uint64_t i = 0; i < 20; ++i) ASSERT_EQ(queue.pop(), as_value(i));
  EXPECT_EQ(queue.pop(), nullptr);
}

TEST(Lcrq, FifoSingleThreaded) {
  lcrq_t queue;  // 1024 cells: 10000 values close the ring several times
  constexpr std::uint64_t count = 10000;
  for (std::uint64_t i = 0; i < count; ++i) queue.push(as_value(i));
  for (std::uint64_t i = 0; i < count; ++i) ASSERT_EQ(queue.pop(), as_value(i));
  EXPECT_EQ(queue.pop(), nullptr);
}

// Tiny rings: pushing far more than a ring holds closes and appends segments
// over and over; popping everything retires and recycles them.
TEST(Lcrq, SegmentTurnoverKeepsOrder) {
  for (std::size_t ring_size : {2, 4, 8}) {
    lcrq_t queue(ring_size);
    constexpr std::uint64_t count = 5000;
    for (std::uint64_t i = 0; i < count; ++i) queue.push(as_value(i));
    for (std::uint64_t i = 0; i < count; ++i) {
      ASSERT_EQ(queue.pop(), as_value(i)) << "ring_size " << ring_size;
    }
    EXPECT_EQ(queue.pop(), nullptr);
  }
}

// Random interleaving of pushes and pops against a std::deque model.
TEST(Lcrq, RandomInterleavingMatchesModel) {
  for (std::size_t ring_size : {2, 4, 16}) {
    lcrq_t queue(ring_size);
    std::deque<void*> model;
    std::mt19937_64 random(ring_size);
    std::uint64_t next = 0;
    for (int step = 0; step < 200000; ++step) {
      // Phases bias toward pushing or popping so the length swings widely.
      const bool push_phase = (step / 1000) % 2 == 0;
      const bool do_push = random() % 10 < (push_phase ? 7u : 3u);
      if (do_push) {
        queue.push(as_value(next));
        model.push_back(as_value(next));
        ++next;
      } else {
        void* expected = model.empty() ? nullptr : model.front();
        if (!model.empty()) model.pop_front();
        ASSERT_EQ(queue.pop(), expected) << "step " << step;
      }
    }
    while (!model.empty()) {
      ASSERT_EQ(queue.pop(), model.front());
      model.pop_front();
    }
    EXPECT_EQ(queue.pop(), nullptr);
  }
}

// Closed segments are recycled: thousands of ring turnovers allocate only a
// handful of segments (a bounded number, not one per turnover).
TEST(Lcrq, SegmentsAreRecycled) {
  lcrq_t queue(4);
  constexpr int rounds = 2000;
  for (int round = 0; round < rounds; ++round) {
    for (std::uint64_t i = 0; i < 10; ++i) queue.push(as_value(i));
    for (std::uint64_t i = 0; i < 10; ++i) ASSERT_EQ(queue.pop(), as_value(i));
  }
  EXPECT_EQ(queue.pop(), nullptr);
  // 10 values span at most 4 segments of 4 cells; the free array keeps the
  // rest. Without recycling this would be about 3 * rounds.
  EXPECT_LE(queue.segments_allocated_count(),
            lci::cq::detail::free_segments_max + 4);
}

TEST(Lcrq, NullPushAborts) {
  lcrq_t queue;
  EXPECT_DEATH(queue.push(nullptr), "null value");
}

TEST(Lcrq, RingSizeMustBePowerOfTwo) {
  EXPECT_DEATH(lcrq_t queue(6), "power of two");
  EXPECT_DEATH(lcrq_t queue(1), "at least 2");
}

class LcrqStress : public ::testing::TestWithParam<std::size_t> {};

// 4 producers and 4 consumers on a tiny ring: rings close and segments are
// retired and recycled under contention, with hazard pointers racing.
TEST_P(LcrqStress, ProducersConsumersConserveAndOrder) {
  auto queue = std::make_unique<lcrq_t>(GetParam());
  const stress_config_t config{4, 4, 250000 / stress_scale_divisor};
  run_mpmc_stress(
      config,
      [&](void* value) {
        queue->push(value);
        return true;
      },
      [&] { return queue->pop(); });
}

// Every thread pushes and pops (the CQ pattern where a thread polls the
// queue it also feeds); then the remainder is drained. Conservation only.
TEST_P(LcrqStress, MixedPushPopThreadsConserve) {
  auto queue = std::make_unique<lcrq_t>(GetParam());
  constexpr int threads_count = 4;
  const std::uint64_t per_thread = 200000 / stress_scale_divisor;
  auto popped = std::make_unique<std::vector<std::uint64_t>[]>(threads_count);
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&, t] {
      for (std::uint64_t s = 0; s < per_thread; ++s) {
        queue->push(encode_value(t, s));
        if (s % 3 != 0) {
          if (void* value = queue->pop()) {
            popped[t].push_back(reinterpret_cast<std::uintptr_t>(value));
          }
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<std::uint64_t> all;
  for (int t = 0; t < threads_count; ++t) {
    all.insert(all.end(), popped[t].begin(), popped[t].end());
  }
  while (void* value = queue->pop()) {
    all.push_back(reinterpret_cast<std::uintptr_t>(value));
  }
  std::vector<std::uint64_t> expected;
  for (int t = 0; t < threads_count; ++t) {
    for (std::uint64_t s = 0; s < per_thread; ++s) {
      expected.push_back(reinterpret_cast<std::uintptr_t>(encode_value(t, s)));
    }
  }
  std::sort(all.begin(), all.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(all, expected);
}

INSTANTIATE_TEST_SUITE_P(RingSizes, LcrqStress,
                         ::testing::Values(std::size_t{2}, std::size_t{8},
                                           std::size_t{1024}));

}  // namespace
