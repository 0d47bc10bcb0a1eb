// LCT_queue_*: every kind is a FIFO of pointers; several producers and
// consumers at once deliver each pushed value exactly once; a fixed-capacity
// kind holds `length` values and a further push is fatal.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lct.h"

namespace {

const LCT_queue_type_t all_kinds[] = {
    LCT_QUEUE_ARRAY_ATOMIC_FAA, LCT_QUEUE_ARRAY_ATOMIC_CAS, LCT_QUEUE_ARRAY_ATOMIC_BASIC,
    LCT_QUEUE_ARRAY_ST,         LCT_QUEUE_ARRAY_MUTEX,      LCT_QUEUE_STD,
    LCT_QUEUE_STD_MUTEX,        LCT_QUEUE_MS,               LCT_QUEUE_LCRQ,
    LCT_QUEUE_LPRQ,             LCT_QUEUE_FAAARRAY,         LCT_QUEUE_LAZY_INDEX};

bool is_fixed(LCT_queue_type_t kind) { return kind <= LCT_QUEUE_ARRAY_MUTEX; }

// Values are 1..n cast to pointers (never NULL).
void* value_of(std::uintptr_t i) { return reinterpret_cast<void*>(i + 1); }
std::uintptr_t index_of(void* value) { return reinterpret_cast<std::uintptr_t>(value) - 1; }

class LctQueue : public ::testing::TestWithParam<LCT_queue_type_t> {};

TEST_P(LctQueue, FifoThenEmpty) {
  constexpr std::size_t values_count = 100;
  LCT_queue_t queue = LCT_queue_alloc(GetParam(), values_count);
  EXPECT_EQ(LCT_queue_pop(queue), nullptr);
  for (std::size_t i = 0; i < values_count; ++i) LCT_queue_push(queue, value_of(i));
  for (std::size_t i = 0; i < values_count; ++i) ASSERT_EQ(LCT_queue_pop(queue), value_of(i));
  EXPECT_EQ(LCT_queue_pop(queue), nullptr);
  LCT_queue_free(&queue);
  EXPECT_EQ(queue, nullptr);
}

TEST_P(LctQueue, ManyThreadsEachValueOnce) {
  constexpr int producers_count = 3, consumers_count = 3;
  constexpr std::size_t per_producer = 20000;
  constexpr std::size_t total = producers_count * per_producer;
  // A fixed-capacity queue has room for every value (a full push is
  // fatal); the others get a length far below the total, which they ignore.
  const std::size_t length = is_fixed(GetParam()) ? total : 64;
  LCT_queue_t queue = LCT_queue_alloc(GetParam(), length);
  std::vector<std::atomic<int>> seen(total);
  std::atomic<std::size_t> popped_count{0};
  std::vector<std::thread> threads;
  for (int p = 0; p < producers_count; ++p) {
    threads.emplace_back([&, p] {
      for (std::size_t i = 0; i < per_producer; ++i)
        LCT_queue_push(queue, value_of(p * per_producer + i));
    });
  }
  for (int c = 0; c < consumers_count; ++c) {
    threads.emplace_back([&] {
      while (popped_count.load() < total) {
        void* value = LCT_queue_pop(queue);
        if (value == nullptr) continue;
        seen[index_of(value)].fetch_add(1);
        popped_count.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(popped_count.load(), total);
  std::size_t once_count = 0;
  for (auto& count : seen) once_count += count.load() == 1;
  EXPECT_EQ(once_count, total);
  EXPECT_EQ(LCT_queue_pop(queue), nullptr);
  LCT_queue_free(&queue);
}

INSTANTIATE_TEST_SUITE_P(AllKinds, LctQueue, ::testing::ValuesIn(all_kinds));

TEST(LctQueueDeath, FixedKindHoldsLengthThenFullIsFatal) {
  constexpr std::size_t length = 5;
  LCT_queue_t queue = LCT_queue_alloc(LCT_QUEUE_ARRAY_ATOMIC_FAA, length);
  for (std::size_t i = 0; i < length; ++i) LCT_queue_push(queue, value_of(i));
  EXPECT_DEATH(LCT_queue_push(queue, value_of(length)), "full");
  LCT_queue_free(&queue);
}

TEST(LctQueueKinds, UnboundedKindTakesMoreThanLength) {
  constexpr std::size_t length = 5;
  LCT_queue_t queue = LCT_queue_alloc(LCT_QUEUE_LCRQ, length);
  for (std::size_t i = 0; i < 100 * length; ++i) LCT_queue_push(queue, value_of(i));
  for (std::size_t i = 0; i < 100 * length; ++i) ASSERT_EQ(LCT_queue_pop(queue), value_of(i));
  LCT_queue_free(&queue);
}

TEST(LctQueueDeath, NullIsFatal) {
  LCT_queue_t queue = LCT_queue_alloc(LCT_QUEUE_LCRQ, 1);
  EXPECT_DEATH(LCT_queue_push(queue, nullptr), "NULL");
  LCT_queue_free(&queue);
}

}  // namespace
