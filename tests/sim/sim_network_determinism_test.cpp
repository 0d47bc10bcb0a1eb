// Deterministic mode: same seed => identical execution (trace hash, delivery
// order); different seeds => different interleavings and delivery orders;
// virtual time models latency and bandwidth.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/sim/sim_network_workload.hpp"

namespace {

using lci::sim::rank_env_t;
using lci::sim::run_options_t;
using lci::sim::run_report_t;
using lci::sim::world_mode_t;
using lci::sim::testing::ring_exchange;
using lci::sim::testing::ring_result_t;

constexpr int ranks_count = 4;
constexpr std::size_t messages_count = 24;

struct ring_run_t {
  run_report_t report;
  ring_result_t result;
};

ring_run_t run_ring(std::uint64_t seed) {
  ring_run_t run;
  run.result.arrivals.resize(ranks_count);
  run.result.arrival_ticks.resize(ranks_count);
  run_options_t options = lci::sim::default_run_options(seed);
  options.log = false;
  run.report = lci::sim::run_ranks(ranks_count, options, [&](rank_env_t& env) {
    ring_exchange(env, messages_count, &run.result);
  });
  return run;
}

TEST(SimNetworkDeterminism, SameSeedSameExecution) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(11, 4)) {
    const ring_run_t first = run_ring(seed);
    const ring_run_t second = run_ring(seed);
    ASSERT_TRUE(first.report.ok) << first.report.report;
    ASSERT_TRUE(second.report.ok) << second.report.report;
    EXPECT_EQ(first.report.trace_hash, second.report.trace_hash);
    EXPECT_EQ(first.report.steps_count, second.report.steps_count);
    EXPECT_EQ(first.report.ticks, second.report.ticks);
    EXPECT_EQ(first.result.arrivals, second.result.arrivals);
    EXPECT_EQ(first.report.deliveries_count, std::uint64_t{ranks_count * messages_count});
  }
}

// Different seeds: different schedules, and the network reorders messages
// differently (the contract promises no order; the sim uses that freedom).
TEST(SimNetworkDeterminism, DifferentSeedsDifferentInterleavingsAndOrders) {
  constexpr std::uint64_t seeds_count = 8;
  std::set<std::uint64_t> hashes;
  std::set<std::vector<std::vector<std::uint32_t>>> orders;
  bool some_out_of_order = false;
  for (std::uint64_t seed = 1; seed <= seeds_count; ++seed) {
    const ring_run_t run = run_ring(seed);
    ASSERT_TRUE(run.report.ok) << run.report.report;
    hashes.insert(run.report.trace_hash);
    orders.insert(run.result.arrivals);
    for (const auto& arrivals : run.result.arrivals) {
      for (std::size_t i = 1; i < arrivals.size(); ++i) {
        if (arrivals[i] < arrivals[i - 1]) some_out_of_order = true;
      }
    }
  }
  EXPECT_EQ(hashes.size(), seeds_count);
  EXPECT_GT(orders.size(), seeds_count / 2);
  EXPECT_TRUE(some_out_of_order);
}

// One message of `size` bytes takes latency + size / bytes_per_tick (+ jitter
// <= jitter_ticks) of virtual time.
TEST(SimNetworkDeterminism, VirtualTimeModelsLatencyAndBandwidth) {
  for (std::size_t size : {8u, 4096u, 65536u}) {
    run_options_t options = lci::sim::default_run_options(5);
    options.log = false;
    options.world.latency_ticks = 1000;
    options.world.jitter_ticks = 10;
    options.world.bytes_per_tick = 16;
    std::uint64_t sent_tick = 0;
    std::uint64_t arrived_tick = 0;
    const run_report_t report = lci::sim::run_ranks(2, options, [&](rank_env_t& env) {
      auto device = env.context().alloc_device({});
      std::vector<char> buffer(size, 'x');
      lci::backend::net_status_t status;
      if (env.rank() == 1) {
        ASSERT_TRUE(device->post_recv(buffer.data(), size, {}, nullptr).is_done());
        env.barrier();
        while (device->poll_comp(&status, 1) == 0) env.wait("the message");
        arrived_tick = lci::sim::scheduler_t::current()->now_ticks();
      } else {
        env.barrier();
        sent_tick = lci::sim::scheduler_t::current()->now_ticks();
        ASSERT_TRUE(device->post_send(1, buffer.data(), size, {}, 0, nullptr).is_posted());
        while (device->poll_comp(&status, 1) == 0) env.wait("send completion");
      }
      env.barrier();
    });
    ASSERT_TRUE(report.ok) << report.report;
    const std::uint64_t wire_ticks = 1000 + size / 16;
    EXPECT_GE(arrived_tick - sent_tick, wire_ticks) << "size " << size;
    // A few scheduling steps of slack (each costs a tick) beyond jitter.
    EXPECT_LE(arrived_tick - sent_tick, wire_ticks + 10 + 64) << "size " << size;
  }
}

// The harness's sweep helper: many seeds + concurrent mode, and threads
// inside a rank run as fibers of the same seeded scheduler.
TEST(SimNetworkDeterminism, SweepWithThreadsPerRank) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 6;
  sweep.configure = [](run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(3, sweep, [](rank_env_t& env) {
    std::vector<int> done(4, 0);
    env.run_threads(4, [&](int thread) {
      env.wait("a turn");
      done[thread] = thread + 1;
    });
    for (int t = 0; t < 4; ++t) lci::sim::testing::require(done[t] == t + 1, "thread missing");
    ring_exchange(env, 8, nullptr);
  });
}

// LCI_SIM_TRACE=1 prints each network event with its tick.
TEST(SimNetworkDeterminism, TraceDumpPrintsEvents) {
  ::setenv("LCI_SIM_TRACE", "1", 1);
  run_options_t options = lci::sim::default_run_options(3);
  ::unsetenv("LCI_SIM_TRACE");
  ASSERT_TRUE(options.world.trace_events);
  options.log = false;
  ::testing::internal::CaptureStderr();
  const run_report_t report = lci::sim::run_ranks(2, options, [](rank_env_t& env) {
    ring_exchange(env, 2, nullptr);
  });
  const std::string text = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(report.ok) << report.report;
  EXPECT_NE(text.find("lci sim: tick "), std::string::npos) << text;
  EXPECT_NE(text.find(" send 0->1 "), std::string::npos) << text;
  EXPECT_NE(text.find(" R #"), std::string::npos) << text;  // a receive event
}

}  // namespace
