// How a simulated run ends when it cannot finish: deadlock, spinlock held
// across a yield, exceptions, bounds, and the seed/replay line in every case.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci/util/assert.hpp"
#include "lci/util/spinlock.hpp"
#include "sim/sim_scheduler.hpp"

namespace {

using lci::sim::run_result_t;
using lci::sim::scheduler_options_t;
using lci::sim::scheduler_t;
using lci::util::spinlock_guard_t;
using lci::util::spinlock_t;
using kind_t = run_result_t::kind_t;

scheduler_options_t quiet_options(std::uint64_t seed) {
  scheduler_options_t options;
  options.seed = seed;
  options.log_header = false;
  options.log_failure = false;
  options.replay_command = "sim_test";
  return options;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

struct flags_t {
  bool alice_done = false;
  bool bob_done = false;
};

// Each fiber sets its flag only after the other's: a deadlock on purpose.
TEST(SimSchedulerFailure, DeadlockReportNamesEveryWaiter) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(7, 5)) {
    auto flags = std::make_unique<flags_t>();
    scheduler_t scheduler(quiet_options(seed));
    scheduler.spawn("alice", [&] {
      while (!flags->bob_done) scheduler_t::wait("bob_done");
      flags->alice_done = true;
      scheduler.note_progress();
    });
    scheduler.spawn("bob", [&] {
      while (!flags->alice_done) scheduler_t::wait("alice_done");
      flags->bob_done = true;
      scheduler.note_progress();
    });
    const run_result_t result = scheduler.run();
    ASSERT_EQ(result.kind, kind_t::deadlock) << result.report;
    EXPECT_TRUE(contains(result.report, "\"alice\": waits for \"bob_done\"")) << result.report;
    EXPECT_TRUE(contains(result.report, "\"bob\": waits for \"alice_done\"")) << result.report;
    EXPECT_TRUE(contains(result.report, "seed " + std::to_string(seed))) << result.report;
    EXPECT_EQ(result.replay, "LCI_SIM_SEED=" + std::to_string(seed) + " sim_test");
    EXPECT_TRUE(contains(result.report, result.replay));
    // Detected promptly: each waited quiet_waits_min times, no spinning.
    EXPECT_LT(result.steps_count, 1000u);
  }
}

// The same shape without the cycle finishes for every seed (no false alarm).
TEST(SimSchedulerFailure, HandshakeWithoutCycleFinishes) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(7, 20)) {
    auto flags = std::make_unique<flags_t>();
    scheduler_t scheduler(quiet_options(seed));
    scheduler.spawn("alice", [&] {
      flags->alice_done = true;
      scheduler.note_progress();
      while (!flags->bob_done) scheduler_t::wait("bob_done");
    });
    scheduler.spawn("bob", [&] {
      while (!flags->alice_done) scheduler_t::wait("alice_done");
      flags->bob_done = true;
      scheduler.note_progress();
    });
    const run_result_t result = scheduler.run();
    EXPECT_TRUE(result.ok()) << result.report;
  }
}

// The network says something is in flight: not a deadlock yet; the run ends
// at steps_max instead, and the report shows the in-flight count.
TEST(SimSchedulerFailure, InFlightPostponesTheDeadlockVerdict) {
  scheduler_options_t options = quiet_options(3);
  options.steps_max = 5000;
  scheduler_t scheduler(options);
  scheduler.set_in_flight_count_fn([] { return std::size_t{2}; });
  scheduler.spawn("receiver", [] {
    for (;;) scheduler_t::wait("a packet that never arrives");
  });
  const run_result_t result = scheduler.run();
  EXPECT_EQ(result.kind, kind_t::steps_exhausted) << result.report;
  EXPECT_EQ(result.steps_count, options.steps_max);
  EXPECT_TRUE(contains(result.report, "in flight 2")) << result.report;
}

// The bug the check exists for: with the lock held across a yield, "taker"
// would spin in lock() forever on the one OS thread. The run must fail
// instead, naming "holder" and the seed, and teardown must release the lock.
TEST(SimSchedulerFailure, YieldUnderSpinlockFailsTheRun) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(11, 10)) {
    auto lock = std::make_unique<spinlock_t>();
    scheduler_t scheduler(quiet_options(seed));
    scheduler.spawn("holder", [&] {
      spinlock_guard_t guard(*lock);
      if (seed % 2 == 0) {
        scheduler_t::yield();
      } else {
        scheduler_t::wait("something under a lock");
      }
    });
    scheduler.spawn("taker", [&] { spinlock_guard_t guard(*lock); });
    const run_result_t result = scheduler.run();
    ASSERT_EQ(result.kind, kind_t::fiber_failed) << result.report;
    EXPECT_EQ(result.failed_fiber, 0u);
    EXPECT_TRUE(contains(result.message, "\"holder\" yielded while holding 1 spinlock"))
        << result.message;
    EXPECT_TRUE(contains(result.report, "seed " + std::to_string(seed)));
    EXPECT_TRUE(contains(result.report, "LCI_SIM_SEED=" + std::to_string(seed)));
    EXPECT_FALSE(lock->is_locked());  // the guard ran during teardown
    EXPECT_EQ(lci::util::spinlocks_held_by_this_thread(), 0u);
  }
}

// A backend call's point counts too, even one that changed the world and
// could go on without a switch: the lock would be held across the next one.
TEST(SimSchedulerFailure, CallPointUnderSpinlockFailsTheRun) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(21, 4)) {
    auto lock = std::make_unique<spinlock_t>();
    scheduler_options_t options = quiet_options(seed);
    options.run_budget_max = 1000;  // a budget to spare: the lock alone fails it
    scheduler_t scheduler(options);
    scheduler.spawn("holder", [&] {
      spinlock_guard_t guard(*lock);
      scheduler_t::call_point("net post_send", true);
    });
    scheduler.spawn("taker", [&] { spinlock_guard_t guard(*lock); });
    const run_result_t result = scheduler.run();
    ASSERT_EQ(result.kind, kind_t::fiber_failed) << result.report;
    EXPECT_EQ(result.failed_fiber, 0u);
    EXPECT_TRUE(contains(result.message,
                         "\"holder\" yielded while holding 1 spinlock(s) at call \"net post_send\""))
        << result.message;
    EXPECT_FALSE(lock->is_locked());  // the guard ran during teardown
    EXPECT_EQ(lci::util::spinlocks_held_by_this_thread(), 0u);
  }
}

TEST(SimSchedulerFailure, FinishingWithASpinlockHeldFails) {
  auto lock = std::make_unique<spinlock_t>();
  scheduler_t scheduler(quiet_options(4));
  scheduler.spawn("leaker", [&] { lock->lock(); });
  const run_result_t result = scheduler.run();
  ASSERT_EQ(result.kind, kind_t::fiber_failed) << result.report;
  EXPECT_TRUE(contains(result.message, "finished while holding 1 spinlock"));
  EXPECT_EQ(lci::util::spinlocks_held_by_this_thread(), 0u);
  // The lock stays locked (it was leaked, not released); unlocking it here
  // would count an unlock this thread never locked, so leave it.
  EXPECT_TRUE(lock->is_locked());
}

TEST(SimSchedulerFailure, ExceptionInAFiberIsReported) {
  scheduler_t scheduler(quiet_options(21));
  scheduler.spawn("calm", [] {
    for (;;) scheduler_t::yield();
  });
  scheduler.spawn("thrower", [] {
    scheduler_t::yield();
    throw std::runtime_error("boom at step two");
  });
  const run_result_t result = scheduler.run();
  ASSERT_EQ(result.kind, kind_t::fiber_failed) << result.report;
  EXPECT_EQ(result.failed_fiber, 1u);
  EXPECT_TRUE(contains(result.message, "\"thrower\" threw: boom at step two")) << result.message;
  EXPECT_TRUE(contains(result.report, "seed 21"));
  EXPECT_TRUE(contains(result.report, "LCI_SIM_SEED=21 sim_test"));
}

struct counted_t {
  explicit counted_t(int* live) : live_(live) { ++*live_; }
  ~counted_t() { --*live_; }
  int* live_;
};

// Ending early (here a bound) unwinds every suspended fiber: destructors run.
TEST(SimSchedulerFailure, TeardownUnwindsSuspendedFibers) {
  auto live = std::make_unique<int>(0);
  scheduler_options_t options = quiet_options(5);
  options.steps_max = 100;
  scheduler_t scheduler(options);
  for (int f = 0; f < 8; ++f) {
    scheduler.spawn("spinner" + std::to_string(f), [&, f] {
      counted_t object(live.get());
      auto heap = std::make_unique<std::vector<int>>(100, f);  // ASan: no leak
      for (;;) scheduler_t::yield();
    });
  }
  const run_result_t result = scheduler.run();
  EXPECT_EQ(result.kind, kind_t::steps_exhausted) << result.report;
  EXPECT_EQ(result.steps_count, options.steps_max);
  EXPECT_EQ(*live, 0);
  EXPECT_EQ(scheduler.fibers_live_count(), 0u);
}

TEST(SimSchedulerFailure, TicksMaxEndsTheRun) {
  scheduler_options_t options = quiet_options(6);
  options.ticks_max = 1'000'000;
  scheduler_t scheduler(options);
  scheduler.spawn("clock", [&] {
    for (;;) {
      scheduler.advance_ticks(1000);
      scheduler_t::yield();
    }
  });
  const run_result_t result = scheduler.run();
  EXPECT_EQ(result.kind, kind_t::ticks_exhausted) << result.report;
  EXPECT_GT(result.ticks, options.ticks_max);
}

// A timer beyond ticks_max while everyone waits ends the run without
// walking virtual time tick by tick.
TEST(SimSchedulerFailure, TimerPastTicksMaxEndsTheRun) {
  scheduler_options_t options = quiet_options(6);
  options.ticks_max = 1000;
  scheduler_t scheduler(options);
  scheduler.spawn("sleeper", [] { scheduler_t::sleep_ticks(1'000'000); });
  const run_result_t result = scheduler.run();
  EXPECT_EQ(result.kind, kind_t::ticks_exhausted) << result.report;
  EXPECT_LT(result.steps_count, 100u);
}

// An LCI_ASSERT inside a fiber aborts the process; the abort note names the
// fiber and prints the replay line first.
TEST(SimSchedulerFailureDeathTest, AssertInAFiberPrintsTheSeed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        scheduler_t scheduler(quiet_options(1234));
        scheduler.spawn("asserter", [] {
          scheduler_t::yield();
          LCI_ASSERT(1 + 1 == 3, "arithmetic broke");
        });
        (void)scheduler.run();
      },
      "arithmetic broke(.|\n)*seed 1234(.|\n)*\"asserter\"(.|\n)*LCI_SIM_SEED=1234 sim_test");
}

}  // namespace
