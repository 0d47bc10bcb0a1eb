// device_pools_t's records for unexpected messages (lci/runtime/device_impl.hpp):
// take_unexpected() never fails; past the pool's bound it allocates a
// record, which give_back() frees and the pools' destruction frees if it
// is still out (a message nobody received). Under ASan (--config=asan)
// LeakSanitizer checks the last part: the records each test leaves out.
#include "lci/runtime/device_impl.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

namespace {

using lci::detail::device_pools_t;
using lci::detail::unexpected_t;

// Records the pool holds; the other bounds are 1 (unused here).
constexpr std::size_t pooled_max = 2;

TEST(DevicePools, RecordsPastThePoolAreAllocatedAndFreedWhenGivenBack) {
  device_pools_t pools(1, pooled_max, 1, 1);
  std::vector<unexpected_t*> records;
  std::set<unexpected_t*> distinct;
  for (int i = 0; i < 6; ++i) {
    unexpected_t* record = pools.take_unexpected();
    ASSERT_NE(record, nullptr);
    record->rank = i;  // every record is writable memory of its own
    record->size = 100 + static_cast<std::size_t>(i);
    records.push_back(record);
    distinct.insert(record);
  }
  EXPECT_EQ(distinct.size(), records.size());
  EXPECT_TRUE(pools.unexpected.owns(records[0]));
  EXPECT_TRUE(pools.unexpected.owns(records[1]));
  for (std::size_t i = pooled_max; i < records.size(); ++i) {
    EXPECT_FALSE(pools.unexpected.owns(records[i])) << i;
  }
  EXPECT_EQ(pools.unexpected_allocated_count(), 4u);
  EXPECT_EQ(pools.unexpected_allocated_total(), 4u);
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i]->rank, static_cast<int>(i));
    EXPECT_EQ(records[i]->size, 100 + i);
  }

  // Out of their order of allocation: the list's middle, its head (the
  // newest), its tail (the oldest), and a pooled record.
  pools.give_back(records[3]);
  pools.give_back(records[5]);
  pools.give_back(records[2]);
  pools.give_back(records[0]);
  EXPECT_EQ(pools.unexpected_allocated_count(), 1u);

  // The pooled record given back is taken before anything is allocated.
  unexpected_t* again = pools.take_unexpected();
  EXPECT_TRUE(pools.unexpected.owns(again));
  EXPECT_EQ(pools.unexpected_allocated_total(), 4u);
  unexpected_t* past = pools.take_unexpected();
  EXPECT_FALSE(pools.unexpected.owns(past));
  EXPECT_EQ(pools.unexpected_allocated_count(), 2u);
  EXPECT_EQ(pools.unexpected_allocated_total(), 5u);
  // records[4] and `past` stay out: the pools' destruction frees them.
}

TEST(DevicePools, ThreadsTakingAndGivingBackLeaveNoAllocatedRecordOut) {
  device_pools_t pools(1, pooled_max, 1, 1);
  constexpr int threads_count = 4;
  constexpr int rounds = 2000;
  constexpr int held = 3;  // per thread: together past the pool
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&pools, t] {
      for (int round = 0; round < rounds; ++round) {
        unexpected_t* records[held];
        for (unexpected_t*& record : records) {
          record = pools.take_unexpected();
          record->rank = t;
        }
        for (unexpected_t* record : records) {
          EXPECT_EQ(record->rank, t);  // nobody else was handed it
          pools.give_back(record);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(pools.unexpected_allocated_count(), 0u);
  // Each round of each thread holds three records at once, and the pool has
  // two: at least one of them was allocated.
  EXPECT_GE(pools.unexpected_allocated_total(),
            static_cast<std::uint64_t>(threads_count) * rounds);
  EXPECT_EQ(pools.unexpected.taken_count(), 0u);
}

}  // namespace
