// A synchronizer's and a waiter's own memory orders as the only
// synchronization between threads (as graph_publication_test does for the
// graph): under --config=tsan a missing happens-before is a reported data
// race; the stress tests synchronize through atomics of their own and
// cannot show it.
//
// Synchronizer, reused round after round: round r's signallers may write
// their slots only once round r - 1's test() has read them, and the slots
// are plain memory, so only the reset in test() (release) and the claim in
// signal() (acquire) order the read before the write. The signallers learn
// that a round is open from a relaxed counter, which orders nothing.
// Waiter: what its signaller wrote before signal() is read by the thread
// whose test() returned true. Counter: what a thread wrote before set() or
// signal() is read by the thread whose get() read that value.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "lci/comp/counter.hpp"
#include "lci/comp/sync.hpp"
#include "lci/comp/waiter.hpp"
#include "tests/comp/comp_test_scale.hpp"

namespace {

using lci::errorcode_t;
using lci::status_t;
using lci::comp::test::scaled;
using lci::detail::counter_impl_t;
using lci::detail::sync_impl_t;
using lci::detail::waiter_impl_t;

void reuse_rounds(int threshold) {
  const int rounds = scaled(400);
  sync_impl_t sync(threshold);
  std::atomic<int> open{0};  // relaxed only: the round signallers may signal
  auto signaller = [&](int which) {
    for (int round = 0; round < rounds; ++round) {
      while (open.load(std::memory_order_relaxed) < round) std::this_thread::yield();
      status_t status(errorcode_t::done);
      status.tag = static_cast<lci::tag_t>(round * threshold + which);
      sync.signal(status);
    }
  };
  std::vector<std::thread> signallers;
  for (int which = 0; which < threshold; ++which) signallers.emplace_back(signaller, which);
  std::vector<status_t> out(threshold);
  for (int round = 0; round < rounds; ++round) {
    while (!sync.test(out.data())) std::this_thread::yield();
    std::vector<bool> seen(threshold, false);
    for (const status_t& status : out) {
      const int which = static_cast<int>(status.tag) - round * threshold;
      ASSERT_TRUE(which >= 0 && which < threshold) << "round " << round << ": tag " << status.tag;
      seen[which] = true;
    }
    for (int which = 0; which < threshold; ++which) ASSERT_TRUE(seen[which]) << round;
    open.store(round + 1, std::memory_order_relaxed);
  }
  for (std::thread& thread : signallers) thread.join();
}

TEST(SyncPublication, AFlagSynchronizerIsRefilledOnlyAfterItsSlotWasRead) { reuse_rounds(1); }

TEST(SyncPublication, ASlotSynchronizerIsRefilledOnlyAfterItsSlotsWereRead) { reuse_rounds(2); }

TEST(WaiterPublication, WhatTheSignallerWroteIsVisibleToTheTester) {
  const int rounds = scaled(400);
  for (int round = 0; round < rounds; ++round) {
    auto waiter = std::make_unique<waiter_impl_t>();
    int datum = -1;  // plain: ordered by the waiter alone
    std::atomic<bool> go{false};
    std::thread signaller([&] {
      // acquire: pairs with the release below (main thread before this one).
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      datum = round;
      status_t status(errorcode_t::done);
      status.tag = static_cast<lci::tag_t>(round);
      waiter->signal(status);
    });
    go.store(true, std::memory_order_release);
    status_t out;
    while (!waiter->test(&out)) std::this_thread::yield();
    EXPECT_EQ(out.tag, static_cast<lci::tag_t>(round));
    EXPECT_EQ(datum, round);
    signaller.join();
  }
}

TEST(CounterPublication, WhatWasWrittenBeforeSetOrSignalIsVisibleToGet) {
  const int rounds = scaled(400);
  for (int round = 0; round < rounds; ++round) {
    counter_impl_t counter;
    int before_set = -1;     // plain: ordered by the counter alone
    int before_signal = -1;  // likewise
    std::atomic<bool> go{false};
    std::atomic<bool> set_seen{false};  // relaxed only: orders nothing
    std::thread writer([&] {
      // acquire: pairs with the release below (main thread before this one).
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      before_set = round;
      counter.set(10);
      // The signal waits until the main thread has read the set value, so
      // that only set() can order before_set.
      while (!set_seen.load(std::memory_order_relaxed)) std::this_thread::yield();
      before_signal = round;
      counter.signal(status_t(errorcode_t::done));
    });
    go.store(true, std::memory_order_release);
    while (counter.get() != 10) std::this_thread::yield();
    EXPECT_EQ(before_set, round);
    set_seen.store(true, std::memory_order_relaxed);
    while (counter.get() != 11) std::this_thread::yield();
    EXPECT_EQ(before_signal, round);
    writer.join();
  }
}

}  // namespace
