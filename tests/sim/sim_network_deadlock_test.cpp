// Global deadlock detection: a deadlock built on purpose (both ranks post a
// receive and wait for a message nobody sends) is reported with the seed,
// what every rank waits for and its network state, and a replay line; in
// concurrent mode the watchdog reports the same instead of hanging
// (more in sim_network_watchdog_test.cpp).
#include <gtest/gtest.h>

#include <string>

#include "sim/sim_harness.hpp"

namespace {

using lci::sim::rank_env_t;
using lci::sim::run_options_t;
using lci::sim::run_report_t;
using lci::sim::world_mode_t;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void wait_for_a_message_nobody_sends(rank_env_t& env) {
  auto device = env.context().alloc_device({});
  char buffer[64];
  while (device->post_recv(buffer, sizeof(buffer), {}, nullptr).is_retry()) env.wait("post_recv");
  lci::backend::net_status_t status;
  while (device->poll_comp(&status, 1) == 0) env.wait("a message from the other rank");
}

TEST(SimNetworkDeadlock, ReportedWithWhatEachRankWaitsFor) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    run_options_t options = lci::sim::default_run_options(seed);
    options.log = false;
    options.scheduler.replay_command = "deadlock_test";
    const run_report_t report = lci::sim::run_ranks(2, options, wait_for_a_message_nobody_sends);
    ASSERT_FALSE(report.ok);
    EXPECT_EQ(report.kind, lci::sim::run_result_t::kind_t::deadlock) << report.report;
    const std::string& text = report.report;
    EXPECT_TRUE(contains(text, "deadlock (seed " + std::to_string(seed))) << text;
    EXPECT_TRUE(contains(text, "rank 0: waits for \"a message from the other rank\"")) << text;
    EXPECT_TRUE(contains(text, "rank 1: waits for \"a message from the other rank\"")) << text;
    EXPECT_TRUE(contains(text, "recvs posted 1, ops in flight 0")) << text;
    EXPECT_TRUE(contains(text, "LCI_SIM_SEED=" + std::to_string(seed) + " deadlock_test")) << text;
    // Found promptly: each rank's deadlock_waits_min waits, not steps_max.
    EXPECT_LT(report.steps_count, 4u * options.scheduler.deadlock_waits_min);
  }
}

// The same program with the message sent finishes (no false alarm).
TEST(SimNetworkDeadlock, NoFalseAlarmWhenTheMessageIsSent) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    run_options_t options = lci::sim::default_run_options(seed);
    options.log = false;
    const run_report_t report = lci::sim::run_ranks(2, options, [](rank_env_t& env) {
      auto device = env.context().alloc_device({});
      char buffer[64];
      while (device->post_recv(buffer, sizeof(buffer), {}, nullptr).is_retry()) env.wait("post_recv");
      while (device->post_sends(1 - env.rank(), "hi", 3, 0).is_retry()) env.wait("post_sends");
      lci::backend::net_status_t status;
      while (device->poll_comp(&status, 1) == 0) env.wait("a message from the other rank");
      env.barrier();
    });
    EXPECT_TRUE(report.ok) << report.report;
  }
}

// Ranks that spin on backend calls alone, without a wait of their own, are
// still found: a call that changes nothing (a poll finding nothing, a post
// refused with retry) is a wait.
TEST(SimNetworkDeadlock, SpinningOnQuietBackendCallsAloneIsFound) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    run_options_t options = lci::sim::default_run_options(seed);
    options.log = false;
    const bool spin_on_posts = seed == 2;
    const run_report_t report = lci::sim::run_ranks(2, options, [&](rank_env_t& env) {
      auto device = env.context().alloc_device({});
      char buffer[64];
      if (spin_on_posts) {
        // Fill the receive queue (each post changes the world), then retry.
        while (device->post_recv(buffer, sizeof(buffer), {}, nullptr).is_done()) {
        }
        for (;;) (void)device->post_recv(buffer, sizeof(buffer), {}, nullptr);
      }
      (void)device->post_recv(buffer, sizeof(buffer), {}, nullptr);
      lci::backend::net_status_t status;
      while (device->poll_comp(&status, 1) == 0) {
      }
    });
    ASSERT_FALSE(report.ok);
    EXPECT_EQ(report.kind, lci::sim::run_result_t::kind_t::deadlock) << report.report;
    const std::string waited = spin_on_posts ? "net post_recv" : "net poll_comp";
    EXPECT_TRUE(contains(report.report, "\"rank 0\": waits for \"" + waited + "\"")) << report.report;
    EXPECT_TRUE(contains(report.report, "\"rank 1\": waits for \"" + waited + "\"")) << report.report;
    // Found promptly: each rank's deadlock_waits_min waits, not steps_max.
    EXPECT_LT(report.steps_count, 4u * options.scheduler.deadlock_waits_min);
  }
}

TEST(SimNetworkDeadlock, ConcurrentModeWatchdogReportsTheSame) {
  run_options_t options = lci::sim::default_run_options(1, world_mode_t::concurrent);
  options.log = false;
  options.watchdog_quiet_ms = 300;
  const run_report_t report = lci::sim::run_ranks(2, options, wait_for_a_message_nobody_sends);
  ASSERT_FALSE(report.ok);
  EXPECT_EQ(report.kind, lci::sim::run_result_t::kind_t::deadlock) << report.report;
  const std::string& text = report.report;
  EXPECT_TRUE(contains(text, "deadlock (concurrent mode, seed 1)")) << text;
  EXPECT_TRUE(contains(text, "watchdog: nothing progressed anywhere")) << text;
  EXPECT_TRUE(contains(text, "rank 0: waits for \"a message from the other rank\"")) << text;
  EXPECT_TRUE(contains(text, "rank 1: waits for \"a message from the other rank\"")) << text;
  EXPECT_TRUE(contains(text, "recvs posted 1, ops in flight 0")) << text;
  EXPECT_TRUE(contains(text, "replay: LCI_SIM_SEED=1 ")) << text;
}

}  // namespace
