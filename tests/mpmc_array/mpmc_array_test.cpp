#include "lci/mpmc_array/mpmc_array.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace {

using lci::errorcode_t;
using lci::mpmc_array::mpmc_array_t;

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int scale = 4;  // sanitizers slow every access
#else
constexpr int scale = 1;
#endif

TEST(MpmcArray, UnwrittenIndicesReadAsDefault) {
  mpmc_array_t<int> array(4, -1);
  EXPECT_EQ(array.size(), 0u);
  EXPECT_EQ(array.get(0), -1);
  EXPECT_EQ(array.get(3), -1);
  EXPECT_EQ(array.get(1000000), -1);  // beyond capacity: default, no resize
  EXPECT_EQ(array.capacity(), 4u);
}

TEST(MpmcArray, PutGrowsByDoubling) {
  mpmc_array_t<std::uintptr_t> array(2);
  ASSERT_TRUE(array.put(0, 10).is_done());
  ASSERT_TRUE(array.put(1, 11).is_done());
  EXPECT_EQ(array.capacity(), 2u);
  ASSERT_TRUE(array.put(2, 12).is_done());  // first resize
  EXPECT_EQ(array.capacity(), 4u);
  ASSERT_TRUE(array.put(9, 19).is_done());  // 4 -> 8 -> 16
  EXPECT_EQ(array.capacity(), 16u);
  EXPECT_EQ(array.size(), 10u);
  EXPECT_EQ(array.get(0), 10u);
  EXPECT_EQ(array.get(1), 11u);
  EXPECT_EQ(array.get(2), 12u);
  EXPECT_EQ(array.get(5), 0u);
  EXPECT_EQ(array.get(9), 19u);
}

TEST(MpmcArray, PushBackReturnsConsecutiveIndices) {
  mpmc_array_t<int> array(1);
  for (int i = 0; i < 100; ++i) {
    std::size_t index = 0;
    ASSERT_TRUE(array.push_back(i * 3, &index).is_done());
    EXPECT_EQ(index, static_cast<std::size_t>(i));
  }
  for (int i = 0; i < 100; ++i) EXPECT_EQ(array.get(i), i * 3);
}

TEST(MpmcArray, CapacityMaxIsAHardLimit) {
  mpmc_array_t<int> array(2, 0, /*capacity_max=*/5);
  ASSERT_TRUE(array.put(4, 7).is_done());  // grows to the clamp, 5
  EXPECT_EQ(array.capacity(), 5u);
  EXPECT_EQ(array.put(5, 8).errorcode, errorcode_t::retry_nomem);
  std::size_t index = 99;
  EXPECT_EQ(array.push_back(8, &index).errorcode, errorcode_t::retry_nomem);
  EXPECT_EQ(index, 99u);  // untouched on failure
  EXPECT_EQ(array.get(4), 7);
  EXPECT_EQ(array.size(), 5u);
}

// An array may start at its largest size: it never grows then, and the
// last index is usable.
TEST(MpmcArray, StartsAtCapacityMax) {
  mpmc_array_t<int> array(4, 0, /*capacity_max=*/4);
  EXPECT_EQ(array.capacity(), 4u);
  ASSERT_TRUE(array.put(3, 9).is_done());
  EXPECT_EQ(array.get(3), 9);
  EXPECT_EQ(array.put(4, 1).errorcode, errorcode_t::retry_nomem);
  EXPECT_EQ(array.capacity(), 4u);
}

TEST(MpmcArray, OverwriteKeepsLatestValue) {
  mpmc_array_t<int> array(1);
  ASSERT_TRUE(array.put(0, 1).is_done());
  ASSERT_TRUE(array.put(0, 2).is_done());
  ASSERT_TRUE(array.put(3, 4).is_done());  // resize copies the overwritten slot
  EXPECT_EQ(array.get(0), 2);
}

// Readers run while writers append (forcing many resizes from capacity 1).
// Every value is derived from its index, so a reader can check each slot it
// reads: it is either the default (not yet written) or exactly 2*index+1; a
// torn or stale-array read after the writer published size() is an error.
TEST(MpmcArrayStress, ReadsDuringResizesSeeWrittenValues) {
  constexpr int writers_count = 2;
  constexpr int readers_count = 4;
  const std::size_t appends_per_writer = 20000 / scale;
  auto array = std::make_unique<mpmc_array_t<std::uintptr_t>>(1);
  std::atomic<int> writers_running{writers_count};
  std::atomic<long> bad_reads{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < writers_count; ++w) {
    threads.emplace_back([&] {
      for (std::size_t i = 0; i < appends_per_writer; ++i) {
        // Append a placeholder, then overwrite it with the value derived
        // from the index it got (exercises put() as well as push_back()).
        std::size_t index = 0;
        ASSERT_TRUE(array->push_back(1, &index).is_done());
        ASSERT_TRUE(array->put(index, 2 * index + 1).is_done());
      }
      writers_running.fetch_sub(1);
    });
  }
  for (int r = 0; r < readers_count; ++r) {
    threads.emplace_back([&] {
      while (writers_running.load() > 0) {
        const std::size_t size = array->size();
        for (std::size_t i = 0; i < size; i += 7) {
          const std::uintptr_t value = array->get(i);
          if (value != 1 && value != 2 * i + 1) bad_reads.fetch_add(1);
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(bad_reads.load(), 0);
  const std::size_t total = writers_count * appends_per_writer;
  ASSERT_EQ(array->size(), total);
  for (std::size_t i = 0; i < total; ++i) ASSERT_EQ(array->get(i), 2 * i + 1);
}

}  // namespace
