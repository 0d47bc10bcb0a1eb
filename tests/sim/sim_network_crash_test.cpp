// Rank crashes: peers' posts to a dead rank and operations waiting on it
// complete with fault peer_crashed naming it; the dead rank's own calls
// throw rank_crashed_t; random crashes never hang a run.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "tests/sim/sim_network_workload.hpp"

namespace {

using lci::backend::net_fault_t;
using lci::backend::net_opcode_t;
using lci::backend::net_status_t;
using lci::sim::fault_kind_t;
using lci::sim::rank_env_t;
using lci::sim::run_options_t;
using lci::sim::run_report_t;
using lci::sim::world_mode_t;
using lci::sim::testing::require;

run_options_t quiet(std::uint64_t seed, world_mode_t mode) {
  run_options_t options = lci::sim::default_run_options(seed, mode);
  options.log = false;
  return options;
}

// The next completion of an operation (peer_down reports are skipped).
net_status_t wait_one(rank_env_t& env, lci::backend::net_device_t& device, const char* what) {
  net_status_t status;
  while (device.poll_comp(&status, 1) == 0 || status.opcode == net_opcode_t::peer_down) {
    env.wait(what);
  }
  return status;
}

// Rank 0 has a message waiting at rank 1 (no buffer there) when rank 1
// dies; then posts a send and a get to the dead rank. All three complete
// with peer_crashed naming rank 1.
TEST(SimNetworkCrash, PeersSeePeerCrashed) {
  for (world_mode_t mode : {world_mode_t::deterministic, world_mode_t::concurrent}) {
    for (std::uint64_t seed : lci::sim::seeds_from_env(31, 4)) {
      const run_report_t report = lci::sim::run_ranks(2, quiet(seed, mode), [](rank_env_t& env) {
        auto device = env.context().alloc_device({});
        char buffer[64] = {};
        if (env.rank() == 1) {
          env.barrier();  // 1: rank 0's message is on its way to us
          while (env.world().describe_ranks().find("messages waiting here 1") == std::string::npos) {
            net_status_t status;
            (void)device->poll_comp(&status, 1);  // concurrent mode: moves the wire
            env.wait("the message to wait here");
          }
          env.crash();
        }
        require(device->post_send(1, buffer, 8, {}, 1, reinterpret_cast<void*>(1)).is_posted(),
                "first send");
        env.barrier();  // 1
        const net_status_t waited = wait_one(env, *device, "fault of the waiting send");
        require(waited.fault == net_fault_t::peer_crashed && waited.rank == 1 &&
                    waited.opcode == net_opcode_t::send &&
                    waited.user_context == reinterpret_cast<void*>(1),
                "waiting send: " + lci::backend::describe_fault(waited));
        require(lci::backend::describe_fault(waited).find("peer rank 1 crashed") != std::string::npos,
                lci::backend::describe_fault(waited));
        require(env.world().is_crashed(1), "rank 1 is dead");
        require(device->post_send(1, buffer, 8, {}, 2, reinterpret_cast<void*>(2)).is_posted(),
                "send to a dead rank is accepted");
        const net_status_t late = wait_one(env, *device, "fault of the late send");
        require(late.fault == net_fault_t::peer_crashed && late.rank == 1, "late send");
        require(device->post_get(1, buffer, 8, {}, 0, {1, 1}, reinterpret_cast<void*>(3)).is_posted(),
                "get");
        const net_status_t get = wait_one(env, *device, "fault of the get");
        require(get.fault == net_fault_t::peer_crashed && get.opcode == net_opcode_t::read &&
                    get.user_context == reinterpret_cast<void*>(3),
                "get to a dead rank");
        env.barrier();  // counts only live ranks
      });
      ASSERT_TRUE(report.ok) << report.report;
      EXPECT_EQ(report.crashed_ranks, std::vector<int>{1});
    }
  }
}

// A dead rank's own later calls throw rank_crashed_t (its code unwinds).
TEST(SimNetworkCrash, DeadRankCallsThrow) {
  bool threw = false;
  const run_report_t report = lci::sim::run_ranks(
      1, quiet(3, world_mode_t::deterministic), [&threw](rank_env_t& env) {
        auto device = env.context().alloc_device({});
        env.world().crash_rank(0);
        net_status_t status;
        try {
          (void)device->poll_comp(&status, 1);
        } catch (const lci::sim::rank_crashed_t& crashed) {
          threw = crashed.rank() == 0;
          throw;
        }
      });
  EXPECT_TRUE(report.ok) << report.report;
  EXPECT_TRUE(threw);
  EXPECT_EQ(report.crashed_ranks, std::vector<int>{0});
}

// Random crashes (fault rank_crash) while ranks exchange messages and wait
// only for their own send completions: every run ends, none hangs, and every
// completion either succeeded or names a crashed rank.
TEST(SimNetworkCrash, RandomCrashesNeverHang) {
  int runs_with_crashes = 0;
  for (world_mode_t mode : {world_mode_t::deterministic, world_mode_t::concurrent}) {
    for (std::uint64_t seed : lci::sim::seeds_from_env(41, 8)) {
      run_options_t options = quiet(seed, mode);
      options.world.faults.rate(fault_kind_t::rank_crash) = 0.01;
      options.check_leftovers = false;  // messages to dead ranks are never received
      const run_report_t report = lci::sim::run_ranks(4, options, [](rank_env_t& env) {
        auto device = env.context().alloc_device({});
        constexpr int sends_count = 20;
        // A buffer for every message that may come: no rank ever has to
        // keep reposting while it waits in the final barrier.
        std::vector<char> buffers(sends_count * 64);
        for (int i = 0; i < sends_count; ++i) {
          while (device->post_recv(buffers.data() + i * 64, 64, {}, nullptr).is_retry()) {
            env.wait("post_recv");
          }
        }
        char payload[8] = {};
        const int next = (env.rank() + 1) % env.ranks_count();
        int completed = 0;
        int posted = 0;
        while (completed < sends_count) {
          if (posted < sends_count && device->post_send(next, payload, 8, {}, 0, nullptr).is_posted()) {
            ++posted;
          }
          net_status_t status;
          while (device->poll_comp(&status, 1) == 1) {
            if (status.opcode == net_opcode_t::recv || status.opcode == net_opcode_t::peer_down) {
              continue;
            }
            require(status.fault == net_fault_t::none || env.world().is_crashed(status.rank),
                    "a fault names a live rank");
            ++completed;
          }
          env.wait("send completions");
        }
        env.barrier();
      });
      ASSERT_TRUE(report.ok) << report.report;
      if (!report.crashed_ranks.empty()) ++runs_with_crashes;
    }
  }
  EXPECT_GT(runs_with_crashes, 0);
}

}  // namespace
