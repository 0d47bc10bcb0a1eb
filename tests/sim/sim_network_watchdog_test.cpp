// Concurrent mode's watchdog (sim/sim_harness.hpp): a run in which nothing
// progresses anywhere for watchdog_quiet_ms fails with deterministic mode's
// deadlock report (every rank's wait and network state, seed, replay line),
// in bounded time, although its ranks spin in backend calls or in LCI's
// progress() and never wait through the harness; a rank that throws stops
// the others at once; a slow run that keeps completing things is never
// stopped, however long it lasts.
//
// The deadlock tests take their watchdog time from LCI_SIM_WATCHDOG_MS when
// it is set (default_run_options, run_program), else test_watchdog_ms:
//   bazel test --test_env=LCI_SIM_WATCHDOG_MS=0 --test_timeout=30
//       //tests/sim:sim_network_watchdog_test
// turns the watchdog off and shows what they did without it (hang).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>

#include "backends/backend.hpp"
#include "lci.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_program.hpp"

namespace {

using lci::backend::net_status_t;
using lci::sim::rank_env_t;
using lci::sim::run_options_t;
using lci::sim::run_report_t;
using lci::sim::world_mode_t;
using kind_t = lci::sim::run_result_t::kind_t;
using steady_t = std::chrono::steady_clock;

// Short, so a deadlock test takes a fraction of a second.
constexpr const char* test_watchdog_ms = "300";
constexpr std::chrono::milliseconds watchdog_ms{300};
// What "bounded" means here: far below a hang (the test's timeout), far
// above a report's 300 ms plus TSan's slowdown on 2 shared cores.
constexpr std::chrono::seconds report_within{30};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The environment's watchdog time, or test_watchdog_ms (see the top).
run_options_t concurrent_options(std::uint64_t seed) {
  setenv(lci::sim::watchdog_env_name, test_watchdog_ms, /*overwrite=*/0);
  run_options_t options = lci::sim::default_run_options(seed, world_mode_t::concurrent);
  options.log = false;
  options.scheduler.replay_command = "watchdog_test";
  return options;
}

// Posts one receive; returns the device.
std::unique_ptr<lci::backend::net_device_t> device_with_a_receive(rank_env_t& env, char* buffer,
                                                                  std::size_t size) {
  auto device = env.context().alloc_device({});
  while (device->post_recv(buffer, size, {}, nullptr).is_retry()) env.wait("post_recv");
  return device;
}

void expect_deadlock_report(const run_report_t& report, steady_t::duration took) {
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.kind, kind_t::deadlock) << report.report;
  const std::string& text = report.report;
  EXPECT_TRUE(contains(text, "deadlock (concurrent mode, seed 7)")) << text;
  EXPECT_TRUE(contains(text, "watchdog: nothing progressed anywhere")) << text;
  EXPECT_TRUE(contains(text, "network state per rank:")) << text;
  EXPECT_TRUE(contains(text, "last quiet call \"net poll_comp\"; device 0: recvs posted 1, "
                             "ops in flight 0")) << text;
  EXPECT_TRUE(contains(text, "replay: LCI_SIM_SEED=7 watchdog_test")) << text;
  EXPECT_GE(took, watchdog_ms);
  EXPECT_LT(took, report_within);
}

// The silent hang users met: both ranks wait for a message the other never
// sends, spinning on poll_comp without ever waiting through the harness.
TEST(SimNetworkWatchdog, RanksSpinningInBackendCallsAreReportedAndStopped) {
  const steady_t::time_point start = steady_t::now();
  const run_report_t report =
      lci::sim::run_ranks(2, concurrent_options(7), [](rank_env_t& env) {
        char buffer[64];
        auto device = device_with_a_receive(env, buffer, sizeof(buffer));
        net_status_t status;
        while (device->poll_comp(&status, 1) == 0) {
        }
      });
  expect_deadlock_report(report, steady_t::now() - start);
  EXPECT_TRUE(contains(report.report, "rank 0: waits for \"post_recv\"") ||
              contains(report.report, "rank 0: waits for \"-\""))
      << report.report;
}

// Threads a rank started (run_threads) are stopped too: their rank joins
// them and unwinds at its next call.
TEST(SimNetworkWatchdog, ThreadsOfAStuckRankAreStoppedToo) {
  const steady_t::time_point start = steady_t::now();
  const run_report_t report =
      lci::sim::run_ranks(2, concurrent_options(7), [](rank_env_t& env) {
        char buffer[64];
        auto device = device_with_a_receive(env, buffer, sizeof(buffer));
        env.run_threads(2, [&device](int) {
          net_status_t status;
          while (device->poll_comp(&status, 1) == 0) {
          }
        });
        (void)device->post_sends(1 - env.rank(), "late", 5, 0);  // throws: stopped
        ADD_FAILURE() << "a stopped rank went on";
      });
  expect_deadlock_report(report, steady_t::now() - start);
}

// The same through the LCI API and run_program, as users met it
// (LCI_SIM_MODE=concurrent bazel-bin/examples/...): each rank waits for an
// active message nobody sends, calling progress() in a loop.
int wait_for_an_am_nobody_sends(int /*argc*/, char** /*argv*/) {
  lci::g_runtime_init();
  lci::comp_t inbox = lci::alloc_cq();
  (void)lci::register_rcomp(inbox);
  lci::barrier();
  lci::status_t received;
  do {
    lci::progress();
    received = lci::cq_pop(inbox);
  } while (received.is_retry());
  return 0;
}

TEST(SimNetworkWatchdog, RunProgramReturnsOneWithTheReport) {
  setenv(lci::sim::watchdog_env_name, test_watchdog_ms, /*overwrite=*/0);
  setenv("LCI_SIM_MODE", "concurrent", /*overwrite=*/1);
  setenv("LCI_SIM_SEED", "7", /*overwrite=*/1);
  char program[] = "watchdog_program";
  char* argv[] = {program, nullptr};
  const steady_t::time_point start = steady_t::now();
  testing::internal::CaptureStderr();
  const int status = lci::sim::run_program(1, argv, 2, wait_for_an_am_nobody_sends);
  const std::string text = testing::internal::GetCapturedStderr();
  const steady_t::duration took = steady_t::now() - start;
  unsetenv("LCI_SIM_MODE");
  unsetenv("LCI_SIM_SEED");
  EXPECT_EQ(status, 1) << text;
  EXPECT_TRUE(contains(text, "deadlock (concurrent mode, seed 7)")) << text;
  EXPECT_TRUE(contains(text, "watchdog: nothing progressed anywhere")) << text;
  EXPECT_TRUE(contains(text, "rank 0: waits for")) << text;
  EXPECT_TRUE(contains(text, "rank 1: waits for")) << text;
  EXPECT_TRUE(contains(text, "last quiet call \"net poll_comp\"")) << text;
  EXPECT_TRUE(contains(text, "replay: LCI_SIM_SEED=7 LCI_SIM_MODE=concurrent watchdog_program"))
      << text;
  EXPECT_GE(took, watchdog_ms);
  EXPECT_LT(took, report_within);
}

// A rank that throws stops the others at once (as a failed fiber ends a
// deterministic run), with the watchdog off: only the stop ends the spin.
TEST(SimNetworkWatchdog, ARankThatThrowsStopsTheOthers) {
  run_options_t options = concurrent_options(7);
  options.watchdog_quiet_ms = 0;
  const run_report_t report = lci::sim::run_ranks(2, options, [](rank_env_t& env) {
    char buffer[64];
    auto device = device_with_a_receive(env, buffer, sizeof(buffer));
    if (env.rank() == 0) throw std::runtime_error("rank 0 gives up");
    net_status_t status;
    while (device->poll_comp(&status, 1) == 0) {
    }
  });
  EXPECT_FALSE(report.ok);
  EXPECT_EQ(report.kind, kind_t::fiber_failed) << report.report;
  EXPECT_TRUE(contains(report.report, "fiber_failed (concurrent mode, seed 7)")) << report.report;
  EXPECT_TRUE(contains(report.report, "rank 0 threw: rank 0 gives up")) << report.report;
  EXPECT_TRUE(contains(report.report, "network state per rank:")) << report.report;
}

// Healthy but slow: rank 0 sends a message every message_gap, the run
// lasting several watchdog times; every delivery is progress, so the
// watchdog never fires.
TEST(SimNetworkWatchdog, ASlowRunThatKeepsCompletingIsNotStopped) {
  constexpr int messages_count = 16;
  constexpr std::chrono::milliseconds message_gap{60};
  run_options_t options = lci::sim::default_run_options(7, world_mode_t::concurrent);
  options.log = false;
  options.watchdog_quiet_ms = static_cast<std::uint64_t>(watchdog_ms.count());
  const steady_t::time_point start = steady_t::now();
  const run_report_t report = lci::sim::run_ranks(2, options, [&](rank_env_t& env) {
    auto device = env.context().alloc_device({});
    char buffers[messages_count][8];
    net_status_t status;
    if (env.rank() == 1) {
      for (auto& buffer : buffers) {
        while (device->post_recv(buffer, sizeof(buffer), {}, nullptr).is_retry()) {
          env.wait("post_recv");
        }
      }
    }
    env.barrier();
    int completed = 0;
    for (int sent = 0; env.rank() == 0 && sent < messages_count; ++sent) {
      std::this_thread::sleep_for(message_gap);  // computing, no call at all
      while (device->post_send(1, "tick", 5, {}, 0, nullptr).is_retry()) env.wait("post_send");
    }
    while (completed < messages_count) {
      if (device->poll_comp(&status, 1) == 1) {
        EXPECT_EQ(status.fault, lci::backend::net_fault_t::none);
        ++completed;
      }
    }
    env.barrier();
  });
  const steady_t::duration took = steady_t::now() - start;
  EXPECT_TRUE(report.ok) << report.report;
  EXPECT_GE(took, 3 * watchdog_ms);  // longer than the watchdog time
}

TEST(SimNetworkWatchdog, AMalformedEnvironmentValueIsAnError) {
  const char* saved = std::getenv(lci::sim::watchdog_env_name);
  const std::string saved_value = saved != nullptr ? saved : "";
  setenv(lci::sim::watchdog_env_name, "10s", /*overwrite=*/1);
  EXPECT_THROW((void)lci::sim::default_run_options(1), std::invalid_argument);
  setenv(lci::sim::watchdog_env_name, "99999999999999999", /*overwrite=*/1);
  EXPECT_THROW((void)lci::sim::default_run_options(1), std::invalid_argument);
  setenv(lci::sim::watchdog_env_name, "250", /*overwrite=*/1);
  EXPECT_EQ(lci::sim::default_run_options(1).watchdog_quiet_ms, 250u);
  if (saved != nullptr) {
    setenv(lci::sim::watchdog_env_name, saved_value.c_str(), /*overwrite=*/1);
  } else {
    unsetenv(lci::sim::watchdog_env_name);
  }
}

}  // namespace
