#include "lci/cq/cq_faa_array.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <random>

#include "tests/cq/cq_stress.hpp"

namespace {

using lci::cq::faa_array_t;
using lci::cq::test::run_mpmc_stress;
using lci::cq::test::stress_config_t;
using lci::cq::test::stress_scale_divisor;

void* as_value(std::uint64_t i) {
  return reinterpret_cast<void*>((i << 4) | 8);  // distinct and never null
}

TEST(FaaArray, EmptyPopReturnsNull) {
  faa_array_t queue(4);
  EXPECT_EQ(queue.capacity(), 4u);
  EXPECT_EQ(queue.pop(), nullptr);
  ASSERT_TRUE(queue.push(as_value(1)));
  EXPECT_EQ(queue.pop(), as_value(1));
  EXPECT_EQ(queue.pop(), nullptr);
}

TEST(FaaArray, FifoSingleThreaded) {
  constexpr std::uint64_t count = 1000;
  faa_array_t queue(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    ASSERT_TRUE(queue.push(as_value(i)));
  }
  for (std::uint64_t i = 0; i < count; ++i) ASSERT_EQ(queue.pop(), as_value(i));
  EXPECT_EQ(queue.pop(), nullptr);
}

// A full queue refuses pushes, stores nothing, and keeps its contents intact;
// capacity 5 is not a power of two, so the refusal comes from admission, not
// from the (8-slot) array running out.
TEST(FaaArray, FullRefusesAndKeepsContents) {
  faa_array_t queue(5);
  for (std::uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(queue.push(as_value(i)));
  for (int attempt = 0; attempt < 10; ++attempt) {
    EXPECT_FALSE(queue.push(as_value(100 + attempt)));
  }
  for (std::uint64_t i = 0; i < 5; ++i) ASSERT_EQ(queue.pop(), as_value(i));
  EXPECT_EQ(queue.pop(), nullptr);
  ASSERT_TRUE(queue.push(as_value(7)));  // usable again after being full
  EXPECT_EQ(queue.pop(), as_value(7));
}

TEST(FaaArray, CapacityOne) {
  faa_array_t queue(1);
  EXPECT_EQ(queue.capacity(), 1u);
  for (std::uint64_t i = 0; i < 1000; ++i) {
    ASSERT_TRUE(queue.push(as_value(i)));
    ASSERT_FALSE(queue.push(as_value(i + 1)));
    ASSERT_EQ(queue.pop(), as_value(i));
    ASSERT_EQ(queue.pop(), nullptr);
  }
}

// The tickets wrap around the slot array many times while the queue is
// repeatedly filled to capacity, refused, and drained partially; every
// result must match a std::deque model bounded by the same capacity.
TEST(FaaArray, WrapsAroundManyTimesLikeModel) {
  for (std::size_t capacity : {2, 3, 7, 8}) {
    faa_array_t queue(capacity);
    std::deque<void*> model;
    std::mt19937_64 random(capacity);
    std::uint64_t next = 0;
    std::uint64_t refused = 0;
    for (int step = 0; step < 100000; ++step) {
      if (random() % 2 == 0) {
        const bool expected = model.size() < capacity;
        ASSERT_EQ(queue.push(as_value(next)), expected) << "step " << step;
        if (expected) {
          model.push_back(as_value(next));
        } else {
          ++refused;
        }
        ++next;
      } else {
        void* expected = model.empty() ? nullptr : model.front();
        if (!model.empty()) model.pop_front();
        ASSERT_EQ(queue.pop(), expected) << "step " << step;
      }
    }
    EXPECT_GT(refused, 0u);  // the full path was really taken
    EXPECT_GT(next - refused, 100 * capacity);  // wrapped many laps
  }
}

TEST(FaaArray, NullPushAborts) {
  faa_array_t queue(2);
  EXPECT_DEATH((void)queue.push(nullptr), "null value");
}

TEST(FaaArray, ZeroCapacityAborts) {
  EXPECT_DEATH(faa_array_t queue(0), "capacity must be positive");
}

class FaaArrayStress : public ::testing::TestWithParam<std::size_t> {};

// 4 producers and 4 consumers on a small array: full and empty results are
// constant, tickets wrap, waits on in-flight peers happen.
TEST_P(FaaArrayStress, ProducersConsumersConserveAndOrder) {
  auto queue = std::make_unique<faa_array_t>(GetParam());
  const stress_config_t config{4, 4, 40000 / stress_scale_divisor};
  run_mpmc_stress(
      config, [&](void* value) { return queue->push(value); },
      [&] { return queue->pop(); });
}

// Fewer consumers than producers: the queue sits at capacity.
TEST_P(FaaArrayStress, MostlyFullConservesAndOrders) {
  auto queue = std::make_unique<faa_array_t>(GetParam());
  const stress_config_t config{5, 2, 30000 / stress_scale_divisor};
  run_mpmc_stress(
      config, [&](void* value) { return queue->push(value); },
      [&] { return queue->pop(); });
}

INSTANTIATE_TEST_SUITE_P(Capacities, FaaArrayStress,
                         ::testing::Values(std::size_t{1}, std::size_t{3},
                                           std::size_t{8}, std::size_t{256}));

}  // namespace
