// capacity() read while writers grow the array: the reader dereferences the
// freshly published storage, so its load of storage_ must acquire what
// grow() released [P]. Kills the mutant that weakens that acquire to relaxed
// (tools/mutate_records/2026-11-26-runs-01-04.md): under --config=tsan the
// relaxed load leaves the read of storage->capacity racing with its
// initialisation, which TSan reports; in the default build the test checks
// the values only.
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lci/mpmc_array/mpmc_array.hpp"

namespace {

using lci::mpmc_array::mpmc_array_t;

TEST(MpmcArrayStress, CapacityReadDuringResizesIsAPublishedCapacity) {
  constexpr std::size_t elements_count = 4096;
  constexpr int readers_count = 2;
  mpmc_array_t<std::size_t> array(1);
  std::atomic<bool> done{false};
  std::vector<std::thread> readers;
  for (int r = 0; r < readers_count; ++r) {
    readers.emplace_back([&] {
      std::size_t last = 1;
      while (!done.load(std::memory_order_acquire)) {
        const std::size_t capacity = array.capacity();
        // Capacities start at 1 and double, and never shrink.
        EXPECT_EQ(capacity & (capacity - 1), 0u) << capacity;
        EXPECT_GE(capacity, last);
        last = capacity;
      }
    });
  }
  for (std::size_t i = 0; i < elements_count; ++i) {
    ASSERT_TRUE(array.put(i, i + 1).is_done());
  }
  done.store(true, std::memory_order_release);
  for (auto& reader : readers) reader.join();
  EXPECT_GE(array.capacity(), elements_count);
}

}  // namespace
