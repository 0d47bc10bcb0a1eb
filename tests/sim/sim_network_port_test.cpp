// The port's data-path pieces: the posted-receive ring (a message takes the
// oldest buffer that fits), seen directly against a model and through the
// device; and the port lock, a spinlock in concurrent mode and a checked
// flag in deterministic mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "lci/util/spinlock.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_prng.hpp"
#include "sim/sim_world.hpp"
#include "tests/sim/sim_network_workload.hpp"

namespace {

using lci::sim::prng_t;
using lci::sim::rank_env_t;
using lci::sim::run_options_t;
using lci::sim::run_report_t;
using lci::sim::detail::port_guard_t;
using lci::sim::detail::port_lock_t;
using lci::sim::detail::recv_queue_t;
using lci::sim::detail::recv_slot_t;
using lci::util::spinlocks_held_by_this_thread;

// Random posts and takes against a vector that erases at the match; the
// ring wraps many times and matches land at every position.
TEST(SimNetworkPort, RecvQueueTakesTheOldestBufferThatFits) {
  constexpr std::size_t capacity = 7;
  for (std::uint64_t seed : lci::sim::seeds_from_env(70, 4)) {
    prng_t prng(seed);
    recv_queue_t queue(capacity);
    std::vector<recv_slot_t> model;
    std::uintptr_t next_buffer = 1;
    std::size_t taken_from_middle = 0;
    for (int op = 0; op < 5000; ++op) {
      const std::size_t size = 8 * (1 + prng.uniform(8));
      if (!queue.full() && prng.uniform(2) == 0) {
        const recv_slot_t slot{reinterpret_cast<void*>(next_buffer++), size, nullptr};
        queue.push(slot);
        model.push_back(slot);
      } else {
        recv_slot_t taken;
        const bool got = queue.take_first_fit(size, &taken);
        const auto fit = std::find_if(model.begin(), model.end(),
                                      [size](const recv_slot_t& slot) { return slot.size >= size; });
        ASSERT_EQ(got, fit != model.end()) << "op " << op;
        if (got) {
          EXPECT_EQ(taken.buffer, fit->buffer) << "op " << op;
          EXPECT_EQ(taken.size, fit->size) << "op " << op;
          if (fit != model.begin()) ++taken_from_middle;
          model.erase(fit);
        }
      }
      ASSERT_EQ(queue.size(), model.size());
      ASSERT_EQ(queue.full(), model.size() == capacity);
    }
    EXPECT_GT(taken_from_middle, 100u);  // the shifting path ran, not only pops
    queue.clear();
    EXPECT_EQ(queue.size(), 0u);
  }
}

// Through the device: receives of 8, 64, 16 and 32 bytes are posted in that
// order; messages of 32, 8, 12 and 20 bytes (sent one after another) take
// the 64-byte buffer (the oldest that fits; best fit would take the 32),
// then the 8, the 16 and the 32.
TEST(SimNetworkPort, MessagesTakeTheOldestBufferThatFits) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(80, 3)) {
    run_options_t options = lci::sim::default_run_options(seed);
    options.log = false;
    auto landed = std::make_unique<std::map<std::uint32_t, std::uintptr_t>>();
    constexpr std::uint32_t messages_count = 4;
    const run_report_t report = lci::sim::run_ranks(2, options, [&](rank_env_t& env) {
      auto device = env.context().alloc_device({});
      std::vector<char> buffer(64);
      lci::backend::net_status_t status;
      if (env.rank() == 1) {
        for (std::uintptr_t size : {8u, 64u, 16u, 32u}) {
          lci::sim::testing::require(
              device->post_recv(buffer.data(), size, {}, reinterpret_cast<void*>(size)).is_done(),
              "post_recv");
        }
        env.barrier();
        while (landed->size() < messages_count) {
          if (device->poll_comp(&status, 1) == 1) {
            (*landed)[status.imm_data] = reinterpret_cast<std::uintptr_t>(status.user_context);
          }
          env.wait("the messages");
        }
      } else {
        env.barrier();
        const std::size_t sizes[messages_count] = {32, 8, 12, 20};
        for (std::uint32_t i = 0; i < messages_count; ++i) {
          lci::sim::testing::require(
              device->post_send(1, buffer.data(), sizes[i], {}, i, nullptr).is_posted(), "post");
          // The completion comes after the delivery: the next message cannot overtake.
          while (device->poll_comp(&status, 1) == 0) env.wait("send completion");
        }
      }
      env.barrier();
    });
    ASSERT_TRUE(report.ok) << report.report;
    EXPECT_EQ(*landed,
              (std::map<std::uint32_t, std::uintptr_t>{{0, 64}, {1, 8}, {2, 16}, {3, 32}}));
  }
}

// A device freed with a send in flight: the network drops the message
// rather than read the sender's memory after the close (the runtime frees
// the packet pool it came from), while an inject, whose bytes the network
// copied at the post, still arrives. The sender overwrites its buffer
// right after the close: a message that arrives with those bytes was read
// from memory the sender had taken back.
TEST(SimNetworkPort, AFreedDevicesSendsAreDroppedAndItsMemoryNeverRead) {
  constexpr std::size_t bytes = 256;
  std::size_t dropped_runs = 0;
  for (std::uint64_t seed : lci::sim::seeds_from_env(90, 8)) {
    run_options_t options = lci::sim::default_run_options(seed);
    options.log = false;
    options.check_leftovers = false;  // the dropped message leaves rank 1's receive posted
    bool zero_copy_arrived = false;
    bool inject_arrived = false;
    bool stale_bytes = false;
    const run_report_t report = lci::sim::run_ranks(2, options, [&](rank_env_t& env) {
      auto device = env.context().alloc_device({});
      std::vector<char> buffer(bytes, 'a');
      if (env.rank() == 1) {
        for (int i = 0; i < 2; ++i) {
          lci::sim::testing::require(
              device->post_recv(buffer.data() + i * (bytes / 2), bytes / 2, {}, nullptr).is_done(),
              "post_recv");
        }
        std::vector<char> big(bytes);
        lci::sim::testing::require(device->post_recv(big.data(), bytes, {}, nullptr).is_done(),
                                   "post_recv");
        env.barrier();
        env.barrier();  // rank 0's device is gone
        lci::backend::net_status_t status;
        // Until the inject arrived (it must), then a few turns more for the
        // other: fewer than the deadlock detector allows a quiet rank (64).
        for (int turn = 0; !inject_arrived || turn < 48; ++turn) {
          if (device->poll_comp(&status, 1) == 1) {
            if (status.imm_data == 1) {
              zero_copy_arrived = true;
              const char* data = static_cast<const char*>(status.buffer);
              stale_bytes = std::any_of(data, data + status.length, [](char c) { return c == 'X'; });
            } else if (status.imm_data == 2) {
              inject_arrived = true;
            }
          }
          env.wait("the messages");
        }
      } else {
        env.barrier();
        lci::sim::testing::require(
            device->post_send(1, buffer.data(), bytes, {}, 1, nullptr).is_posted(), "post_send");
        char small = 'i';
        lci::sim::testing::require(device->post_sends(1, &small, 1, 2).is_done(), "post_sends");
        device.reset();
        std::fill(buffer.begin(), buffer.end(), 'X');
        env.barrier();
      }
    });
    ASSERT_TRUE(report.ok) << report.report;
    EXPECT_FALSE(stale_bytes) << "seed " << seed << ": a message was read after its device closed";
    EXPECT_TRUE(inject_arrived) << "seed " << seed;
    if (!zero_copy_arrived) ++dropped_runs;
  }
  EXPECT_GT(dropped_runs, 0u) << "no run closed the device before its send was delivered";
}

// Deterministic mode: the lock is a flag that never finds itself taken, and
// counts as a held spinlock (so the scheduler's switch check covers it).
TEST(SimNetworkPort, SingleThreadLockCountsAsASpinlock) {
  port_lock_t lock(true);
  ASSERT_EQ(spinlocks_held_by_this_thread(), 0u);
  for (const auto mode : {port_guard_t::mode_t::try_once, port_guard_t::mode_t::wait}) {
    port_guard_t guard(lock, mode);
    EXPECT_TRUE(guard.owns_lock());
    EXPECT_EQ(spinlocks_held_by_this_thread(), 1u);
  }
  EXPECT_EQ(spinlocks_held_by_this_thread(), 0u);
}

TEST(SimNetworkPortDeathTest, SingleThreadLockFoundTakenAborts) {
  EXPECT_DEATH(
      {
        port_lock_t lock(true);
        const bool first = lock.try_lock();
        const bool second = lock.try_lock();
        (void)first;
        (void)second;
      },
      "a port lock held across a scheduling point");
}

// Concurrent mode: a real spinlock; another thread finds it busy.
TEST(SimNetworkPort, MultiThreadLockIsASpinlock) {
  port_lock_t lock(false);
  ASSERT_TRUE(lock.try_lock());
  EXPECT_EQ(spinlocks_held_by_this_thread(), 1u);
  bool other_got_it = true;
  std::thread busy([&] { other_got_it = lock.try_lock(); });
  busy.join();
  EXPECT_FALSE(other_got_it);
  lock.unlock();
  EXPECT_EQ(spinlocks_held_by_this_thread(), 0u);
  std::thread free([&] {
    port_guard_t guard(lock, port_guard_t::mode_t::try_once);
    other_got_it = guard.owns_lock();
  });
  free.join();
  EXPECT_TRUE(other_got_it);
}

}  // namespace
