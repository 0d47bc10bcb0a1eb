// util::thread_index(): dense, distinct among live threads, handed on when
// a thread exits; thread_random(): in range.
#include "lci/util/thread_context.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <set>
#include <thread>
#include <vector>

namespace {

// Threads alive at once (each waits for all to have an index before it
// exits) have distinct indices.
TEST(ThreadContext, IndicesAreDistinctAndStable) {
  constexpr int threads_count = 8;
  std::vector<std::size_t> indices(threads_count);
  std::atomic<int> indexed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&, t] {
      indices[t] = lci::util::thread_index();
      indexed.fetch_add(1, std::memory_order_relaxed);
      while (indexed.load(std::memory_order_relaxed) < threads_count) std::this_thread::yield();
      EXPECT_EQ(indices[t], lci::util::thread_index());
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(std::set<std::size_t>(indices.begin(), indices.end()).size(),
            std::size_t{threads_count});
}

// A program that creates a thread per task: each new thread takes the index
// of one that exited, so every one of them stays on the structures'
// per-index paths (below hazard_owned_slots_max and the CQ's node cache
// slots, 64).
TEST(ThreadContext, AnExitedThreadsIndexGoesToTheNextThread) {
  (void)lci::util::thread_index();  // the main thread keeps its own
  constexpr int threads_count = 200;
  std::vector<std::size_t> indices(threads_count);
  for (int t = 0; t < threads_count; ++t) {
    std::thread([&, t] { indices[t] = lci::util::thread_index(); }).join();
  }
  for (int t = 1; t < threads_count; ++t) ASSERT_EQ(indices[t], indices[0]) << "thread " << t;
}

// Threads that start while others exit, none joined until the end: no two
// live threads share an index (each adds to a plain counter of its index;
// a shared index would lose increments), and what one holder of an index did
// happens before what the next does (ThreadSanitizer, under --config=tsan,
// reports the plain counters otherwise).
TEST(ThreadContext, PerIndexStateNeedsNoLock) {
  constexpr int threads_count = 200;
  constexpr int live_max = 4;
  constexpr std::size_t increments = 1000;
  // Room for every index the binary can have handed out, reused or not.
  constexpr std::size_t slots = 1024;
  std::vector<std::size_t> counters(slots, 0);
  std::atomic<int> live{0};
  std::atomic<bool> index_out_of_range{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    // relaxed: only bounds how many run at once. An acquire here (paired
    // with a release at the decrement) would order an exited thread's
    // counter writes before the next thread's through this thread, and hide
    // from TSan an index handover that orders nothing.
    while (live.load(std::memory_order_relaxed) >= live_max) std::this_thread::yield();
    live.fetch_add(1, std::memory_order_relaxed);
    threads.emplace_back([&] {
      const std::size_t index = lci::util::thread_index();
      if (index >= slots) {
        index_out_of_range.store(true, std::memory_order_relaxed);
      } else {
        for (std::size_t i = 0; i < increments; ++i) {
          counters[index] = counters[index] + 1;
          std::atomic_signal_fence(std::memory_order_seq_cst);  // one store per increment
        }
      }
      live.fetch_sub(1, std::memory_order_relaxed);
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_FALSE(index_out_of_range.load(std::memory_order_relaxed));
  std::size_t total = 0;
  for (const std::size_t count : counters) total += count;
  EXPECT_EQ(total, threads_count * increments);
}

TEST(ThreadContext, RandomStaysInRangeAndCoversIt) {
  constexpr std::uint32_t limit = 7;
  std::vector<int> hits(limit, 0);
  for (int i = 0; i < 7000; ++i) {
    const std::uint32_t value = lci::util::thread_random(limit);
    ASSERT_LT(value, limit);
    ++hits[value];
  }
  for (std::uint32_t v = 0; v < limit; ++v) EXPECT_GT(hits[v], 500) << v;
}

}  // namespace
