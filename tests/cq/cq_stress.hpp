// Test utilities shared by the completion-queue tests: a multi-producer,
// multi-consumer stress harness that checks conservation (every value pushed
// is popped exactly once) and per-producer FIFO order as seen by each
// consumer, which any linearizable FIFO queue must respect.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LCI_CQ_TEST_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define LCI_CQ_TEST_TSAN 1
#endif

namespace lci::cq::test {

// TSan slows atomics down ~10-50x: scale iteration counts so that every test
// stays well under its time limit there.
#if defined(LCI_CQ_TEST_TSAN)
inline constexpr std::uint64_t stress_scale_divisor = 4;
#else
inline constexpr std::uint64_t stress_scale_divisor = 1;
#endif

// A value names its producer and its sequence number; never null.
inline void* encode_value(std::uint64_t producer, std::uint64_t sequence) {
  return reinterpret_cast<void*>(((producer + 1) << 40) | (sequence << 1) | 1);
}
inline std::uint64_t value_producer(void* value) {
  return (reinterpret_cast<std::uintptr_t>(value) >> 40) - 1;
}
inline std::uint64_t value_sequence(void* value) {
  return (reinterpret_cast<std::uintptr_t>(value) & ((1ull << 40) - 1)) >> 1;
}

struct stress_config_t {
  int producers_count;
  int consumers_count;
  std::uint64_t values_per_producer;
};

// Runs producers that push values_per_producer values each (retrying while
// try_push returns false) and consumers that pop until all values arrived.
// try_push(void*) -> bool; pop() -> void* (nullptr when empty).
template <typename TryPush, typename Pop>
void run_mpmc_stress(const stress_config_t& config, TryPush try_push, Pop pop) {
  const std::uint64_t total =
      config.values_per_producer * std::uint64_t(config.producers_count);
  // Shared state on the heap so that TSan watches it.
  auto seen = std::make_unique<std::atomic<std::uint32_t>[]>(total);
  for (std::uint64_t i = 0; i < total; ++i) seen[i].store(0);
  auto popped_count = std::make_unique<std::atomic<std::uint64_t>>(0);
  auto order_errors = std::make_unique<std::atomic<std::uint64_t>>(0);
  auto decode_errors = std::make_unique<std::atomic<std::uint64_t>>(0);
  auto full_count = std::make_unique<std::atomic<std::uint64_t>>(0);
  auto empty_count = std::make_unique<std::atomic<std::uint64_t>>(0);

  // Start gate: no thread starts before all exist, so that producers and
  // consumers really overlap (thread creation is slow next to a push).
  const int threads_count = config.producers_count + config.consumers_count;
  auto ready_count = std::make_unique<std::atomic<int>>(0);
  auto wait_for_all = [&] {
    ready_count->fetch_add(1);
    while (ready_count->load() < threads_count) std::this_thread::yield();
  };

  std::vector<std::thread> threads;
  for (int p = 0; p < config.producers_count; ++p) {
    threads.emplace_back([&, p] {
      wait_for_all();
      for (std::uint64_t s = 0; s < config.values_per_producer; ++s) {
        while (!try_push(encode_value(p, s))) {
          full_count->fetch_add(1, std::memory_order_relaxed);
          std::this_thread::yield();
        }
      }
    });
  }
  for (int c = 0; c < config.consumers_count; ++c) {
    threads.emplace_back([&] {
      wait_for_all();
      std::vector<std::int64_t> last_sequence(config.producers_count, -1);
      while (popped_count->load(std::memory_order_relaxed) < total) {
        void* value = pop();
        if (value == nullptr) {
          empty_count->fetch_add(1, std::memory_order_relaxed);
          std::this_thread::yield();
          continue;
        }
        const std::uint64_t producer = value_producer(value);
        const std::uint64_t sequence = value_sequence(value);
        if (producer >= std::uint64_t(config.producers_count) ||
            sequence >= config.values_per_producer) {
          decode_errors->fetch_add(1);
          popped_count->fetch_add(1);
          continue;
        }
        if (std::int64_t(sequence) <= last_sequence[producer]) {
          order_errors->fetch_add(1);
        }
        last_sequence[producer] = std::int64_t(sequence);
        seen[producer * config.values_per_producer + sequence].fetch_add(1);
        popped_count->fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();

  EXPECT_EQ(decode_errors->load(), 0u);
  EXPECT_EQ(order_errors->load(), 0u) << "per-producer FIFO order violated";
  std::uint64_t missing = 0;
  std::uint64_t duplicated = 0;
  for (std::uint64_t i = 0; i < total; ++i) {
    const std::uint32_t times = seen[i].load();
    if (times == 0) ++missing;
    if (times > 1) ++duplicated;
  }
  EXPECT_EQ(missing, 0u);
  EXPECT_EQ(duplicated, 0u);
  EXPECT_EQ(popped_count->load(), total);
  EXPECT_EQ(pop(), nullptr) << "queue not empty after every value was popped";
  // Not a pass/fail criterion, but shows which paths the run exercised.
  ::testing::Test::RecordProperty("full_results",
                                  static_cast<int>(full_count->load()));
  ::testing::Test::RecordProperty("empty_results",
                                  static_cast<int>(empty_count->load()));
  std::printf("stress: %llu values, %llu full results, %llu empty results\n",
              static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(full_count->load()),
              static_cast<unsigned long long>(empty_count->load()));
}

}  // namespace lci::cq::test
