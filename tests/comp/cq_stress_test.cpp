// Stress of cq_impl_t, both kinds: 4 signalling threads and 2 popping
// threads. Every status must be popped exactly once and whole (the array
// kind copies statuses through its slots: every field is derived from the
// signaller and sequence, so a status torn between two signals is caught),
// and each popper must see each signaller's statuses in signal order. The array kind runs with a
// small length, and its poppers are held back until the signallers have
// queued more than it holds, so the overflow list fills, then drains while
// signals continue.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lci/comp/cq.hpp"
#include "tests/comp/comp_test_scale.hpp"

namespace {

using lci::status_t;
using lci::detail::cq_impl_t;
using lci::detail::cq_kind_t;

constexpr int signallers_count = 4;
constexpr int poppers_count = 2;
constexpr int array_length = 16;

// The fields besides rank and tag, each a function of both.
std::uintptr_t signature(int signaller, long sequence) {
  return (static_cast<std::uintptr_t>(sequence) << 3) | static_cast<std::uintptr_t>(signaller);
}
bool is_whole(const status_t& status) {
  const std::uintptr_t expected = signature(status.rank, static_cast<long>(status.tag));
  return reinterpret_cast<std::uintptr_t>(status.buffer) == expected &&
         status.size == ~expected && reinterpret_cast<std::uintptr_t>(status.user_context) ==
                                         expected * 3 + 1;
}

void run_stress(cq_kind_t kind, int length = array_length) {
  const int per_signaller = lci::comp::test::scaled(100000);
  const int held_back_per_signaller = 4 * array_length;  // > length in all
  const int total = per_signaller * signallers_count;
  cq_impl_t cq(kind, length);
  auto seen = std::make_unique<std::atomic<int>[]>(total);
  for (int i = 0; i < total; ++i) seen[i].store(0);
  std::atomic<int> popped_count{0};
  std::atomic<int> order_errors{0};
  std::atomic<int> decode_errors{0};
  std::atomic<int> held_back_done{0};

  std::vector<std::thread> threads;
  for (int s = 0; s < signallers_count; ++s) {
    threads.emplace_back([&, s] {
      for (int i = 0; i < per_signaller; ++i) {
        if (i == held_back_per_signaller) held_back_done.fetch_add(1);
        status_t status(lci::errorcode_t::done);
        status.rank = s;
        status.tag = static_cast<lci::tag_t>(i);
        const std::uintptr_t fields = signature(s, i);
        status.buffer = reinterpret_cast<void*>(fields);
        status.size = ~fields;
        status.user_context = reinterpret_cast<void*>(fields * 3 + 1);
        cq.signal(status);
      }
    });
  }
  for (int p = 0; p < poppers_count; ++p) {
    threads.emplace_back([&] {
      while (held_back_done.load() < signallers_count)
        std::this_thread::yield();
      std::vector<long> last(signallers_count, -1);
      while (popped_count.load(std::memory_order_relaxed) < total) {
        const status_t status = cq.pop();
        if (status.is_retry()) {
          std::this_thread::yield();
          continue;
        }
        const long sequence = static_cast<long>(status.tag);
        if (status.rank < 0 || status.rank >= signallers_count ||
            sequence >= per_signaller || !status.is_done() || !is_whole(status)) {
          decode_errors.fetch_add(1);
          popped_count.fetch_add(1);
          continue;
        }
        if (sequence <= last[status.rank]) order_errors.fetch_add(1);
        last[status.rank] = sequence;
        seen[status.rank * per_signaller + sequence].fetch_add(1);
        popped_count.fetch_add(1);
      }
    });
  }
  for (auto& thread : threads) thread.join();

  int missing = 0;
  int duplicated = 0;
  for (int i = 0; i < total; ++i) {
    missing += seen[i].load() == 0;
    duplicated += seen[i].load() > 1;
  }
  EXPECT_EQ(decode_errors.load(), 0);
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(duplicated, 0);
  EXPECT_EQ(order_errors.load(), 0) << "per-signaller FIFO order violated";
  EXPECT_TRUE(cq.pop().is_retry());
  if (kind == cq_kind_t::array_atomic && length == array_length) {
    EXPECT_GE(cq.spilled_count(),
              static_cast<std::uint64_t>(
                  signallers_count * held_back_per_signaller - array_length))
        << "the overflow path was not exercised";
  }
}

TEST(CqStressTest, ArrayAtomicWithOverflow) {
  run_stress(cq_kind_t::array_atomic);
}

TEST(CqStressTest, Lcrq) { run_stress(cq_kind_t::lcrq); }

// A real process's default length: the per-thread node caches are on
// (cq.hpp, node_cache_t), signallers refill theirs from the pool in
// batches and poppers flush theirs back.
TEST(CqStressTest, LcrqWithNodeCaches) { run_stress(cq_kind_t::lcrq, 65536); }
TEST(CqStressTest, ArrayAtomicWithNodeCaches) { run_stress(cq_kind_t::array_atomic, 65536); }

// One thread signals, another pops, a few statuses in flight at a time:
// every node the popper's cache collects goes back to the pool for the
// signaller's next refill, so no signal ever allocates. A cache that kept
// or lost what it flushes would empty the pool within the run.
TEST(CqStressTest, NodesFlowBackFromThePoppersCache) {
  constexpr int length = 4096;
  constexpr int in_flight_max = 8;
  const int total = lci::comp::test::scaled(200000);
  cq_impl_t cq(cq_kind_t::lcrq, length);
  std::atomic<int> popped{0};
  std::thread signaller([&] {
    for (int i = 0; i < total; ++i) {
      while (i - popped.load() >= in_flight_max) std::this_thread::yield();
      status_t status(lci::errorcode_t::done);
      status.tag = static_cast<lci::tag_t>(i);
      cq.signal(status);
    }
  });
  int out_of_order = 0;
  for (int expected = 0; expected < total;) {
    const status_t status = cq.pop();
    if (status.is_retry()) continue;
    out_of_order += static_cast<int>(status.tag) != expected;
    ++expected;
    popped.store(expected);
  }
  signaller.join();
  EXPECT_EQ(out_of_order, 0);
  EXPECT_EQ(cq.allocated_nodes_count(), 0u)
      << "signals allocated nodes with at most " << in_flight_max << " of " << length
      << " in the queue";
}

}  // namespace
