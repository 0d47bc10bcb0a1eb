#include "lci/util/atomic.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace {

using lci::util::atomic_u64_pair;
using lci::util::u64_pair;

TEST(AtomicPair, CompareExchangeReplacesBothHalvesOrNeither) {
  atomic_u64_pair cell;
  cell.init({1, 2});
  EXPECT_FALSE(cell.compare_exchange({1, 3}, {7, 8}));  // hi differs
  EXPECT_FALSE(cell.compare_exchange({0, 2}, {7, 8}));  // lo differs
  EXPECT_EQ(cell.load_lo(), 1u);
  EXPECT_EQ(cell.load_hi(), 2u);
  EXPECT_TRUE(cell.compare_exchange({1, 2}, {7, 8}));
  EXPECT_EQ(cell.load_lo(), 7u);
  EXPECT_EQ(cell.load_hi(), 8u);
}

TEST(AtomicPair, IsSixteenBytesAligned) {
  EXPECT_EQ(sizeof(atomic_u64_pair), 16u);
  EXPECT_EQ(alignof(atomic_u64_pair), 16u);
}

// Both halves are incremented together by CAS from several threads; a torn
// update would leave lo != hi, a lost one a total below the target.
TEST(AtomicPairStress, DoubleWidthIncrementsAreAtomic) {
  constexpr int threads_count = 4;
  constexpr int increments_per_thread = 50000;
  auto cell = std::make_unique<atomic_u64_pair>();
  cell->init({0, 1000});
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < increments_per_thread;) {
        const u64_pair seen{cell->load_lo(), cell->load_hi()};
        if (cell->compare_exchange(seen, {seen.lo + 1, seen.hi + 1})) ++i;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  const std::uint64_t total = std::uint64_t{threads_count} * increments_per_thread;
  EXPECT_EQ(cell->load_lo(), total);
  EXPECT_EQ(cell->load_hi(), 1000 + total);
}

}  // namespace
