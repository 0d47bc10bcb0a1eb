// Virtual time, timers, seeds from the environment, and per-fiber C++
// exception state of lci::sim::scheduler_t.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/sim_scheduler.hpp"

namespace {

using lci::sim::policy_t;
using lci::sim::run_result_t;
using lci::sim::scheduler_options_t;
using lci::sim::scheduler_t;

scheduler_options_t quiet_options(std::uint64_t seed) {
  scheduler_options_t options;
  options.seed = seed;
  options.log_header = false;
  options.log_failure = false;
  return options;
}

// With every fiber waiting for a timer, time jumps to it: a sleep of a
// million ticks costs a handful of scheduling steps, not a million.
TEST(SimTime, SleepJumpsToTheNextTimer) {
  scheduler_options_t options = quiet_options(1);
  scheduler_t scheduler(options);
  auto woke_at = std::make_unique<std::uint64_t>(0);
  scheduler.spawn("sleeper", [&] {
    scheduler_t::sleep_ticks(1'000'000);
    *woke_at = scheduler.now_ticks();
  });
  const run_result_t result = scheduler.run();
  ASSERT_TRUE(result.ok()) << result.report;
  EXPECT_GE(*woke_at, 1'000'000u);
  // quiet_waits_min waits, the jump, the wake-up and the return.
  EXPECT_LE(result.steps_count, 2u * options.quiet_waits_min + 2);
}

// Timers fire in (tick, scheduling order), on the scheduler's stack.
TEST(SimTime, TimersFireInTickThenSchedulingOrder) {
  const std::vector<std::uint64_t> ticks = {30, 10, 20, 10, 30, 5};
  auto fired = std::make_unique<std::vector<std::size_t>>();
  scheduler_t scheduler(quiet_options(2));
  scheduler.spawn("arm", [&] {
    const std::uint64_t now = scheduler.now_ticks();
    for (std::size_t i = 0; i < ticks.size(); ++i) {
      const lci::error_t error = scheduler.schedule_at(now + ticks[i], [&fired, i] {
        EXPECT_EQ(scheduler_t::current_fiber(), lci::sim::fiber_id_invalid);
        fired->push_back(i);
      });
      ASSERT_TRUE(error.is_done());
    }
    while (fired->size() < ticks.size()) scheduler_t::wait("timers");
  });
  ASSERT_TRUE(scheduler.run().ok());
  std::vector<std::size_t> expected(ticks.size());
  for (std::size_t i = 0; i < ticks.size(); ++i) expected[i] = i;
  std::stable_sort(expected.begin(), expected.end(),
                   [&](std::size_t a, std::size_t b) { return ticks[a] < ticks[b]; });
  EXPECT_EQ(*fired, expected);
}

TEST(SimTime, TimersMaxReturnsRetryNomem) {
  scheduler_options_t options = quiet_options(3);
  options.timers_max = 4;
  scheduler_t scheduler(options);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(scheduler.schedule_after(10, [] {}).is_done());
  }
  EXPECT_EQ(scheduler.schedule_after(10, [] {}).errorcode, lci::errorcode_t::retry_nomem);
  EXPECT_TRUE(scheduler.run().ok());  // no fibers: finished, timers dropped
}

// The timer queue against a reference model. One fiber arms timers at
// moments spread over virtual time, for ticks from "now" to ten calendar
// windows ahead (so many pass through the overflow heap and move into the
// calendar later), with many ties, while time advances by sleeps (timers) and
// by advance_ticks() (none: the calendar's base lags behind). Every timer
// fires once, never before its tick, in (tick, scheduling order).
TEST(SimTime, NearAndFarTimersFireInTickThenSchedulingOrder) {
  constexpr std::size_t timers_count = 2000;
  for (std::uint64_t seed : lci::sim::seeds_from_env(60, 4)) {
    scheduler_t scheduler(quiet_options(seed));
    auto armed_ticks = std::make_unique<std::vector<std::uint64_t>>();
    auto fired = std::make_unique<std::vector<std::size_t>>();
    auto early = std::make_unique<std::size_t>(0);
    scheduler.spawn("arm", [&] {
      lci::sim::prng_t prng(seed);
      for (std::size_t i = 0; i < timers_count; ++i) {
        std::uint64_t ahead;
        switch (prng.uniform(4)) {
          case 0: ahead = prng.uniform(20'000); break;   // far: overflow heap
          case 1: ahead = 2040 + prng.uniform(16); break;  // the window's edge
          case 2: ahead = prng.uniform(8); break;          // near, many ties
          default: ahead = 100 + prng.uniform(64); break;  // the wire's delays
        }
        const std::uint64_t tick = scheduler.now_ticks() + ahead;
        armed_ticks->push_back(tick);
        const lci::error_t error = scheduler.schedule_at(tick, [&, tick, i] {
          if (scheduler.now_ticks() < tick) ++*early;
          fired->push_back(i);
        });
        ASSERT_TRUE(error.is_done());
        switch (prng.uniform(16)) {
          case 0: scheduler_t::sleep_ticks(prng.uniform(3000)); break;
          case 1: scheduler.advance_ticks(prng.uniform(5000)); break;
          default: break;
        }
      }
      while (fired->size() < timers_count) scheduler_t::wait("timers");
    });
    const run_result_t result = scheduler.run();
    ASSERT_TRUE(result.ok()) << result.report;
    std::vector<std::size_t> expected(timers_count);
    for (std::size_t i = 0; i < timers_count; ++i) expected[i] = i;
    std::stable_sort(expected.begin(), expected.end(), [&](std::size_t a, std::size_t b) {
      return (*armed_ticks)[a] < (*armed_ticks)[b];
    });
    EXPECT_EQ(*fired, expected) << "seed " << seed;
    EXPECT_EQ(*early, 0u);
  }
}

// Intrusive events (the network's packets) and schedule_at()'s callbacks
// share one order and one timers_max.
TEST(SimTime, IntrusiveEventsShareOrderAndLimitWithCallbacks) {
  struct note_event_t : lci::sim::timer_event_t {
    std::vector<int>* log = nullptr;
    int value = 0;
  };
  scheduler_options_t options = quiet_options(4);
  options.timers_max = 4;
  scheduler_t scheduler(options);
  auto log = std::make_unique<std::vector<int>>();
  auto events = std::make_unique<note_event_t[]>(3);
  for (int i = 0; i < 3; ++i) {
    events[i].log = log.get();
    events[i].value = 10 + i;
    events[i].fire = [](lci::sim::timer_event_t* event, void* fire_context) {
      auto* note = static_cast<note_event_t*>(event);
      EXPECT_EQ(fire_context, note->log);
      note->log->push_back(note->value);
    };
    events[i].fire_context = log.get();
  }
  // Tick 20: event 10, callback 1, event 11; tick 5: callback 2.
  ASSERT_TRUE(scheduler.schedule_event_at(20, &events[0]).is_done());
  ASSERT_TRUE(scheduler.schedule_at(20, [&] { log->push_back(1); }).is_done());
  ASSERT_TRUE(scheduler.schedule_event_after(20, &events[1]).is_done());
  ASSERT_TRUE(scheduler.schedule_at(5, [&] { log->push_back(2); }).is_done());
  EXPECT_EQ(scheduler.schedule_event_at(30, &events[2]).errorcode, lci::errorcode_t::retry_nomem);
  EXPECT_EQ(scheduler.schedule_at(30, [] {}).errorcode, lci::errorcode_t::retry_nomem);
  scheduler.spawn("waiter", [&] {
    while (log->size() < 4) scheduler_t::wait("timers");
    // Fired timers free their places: the limit counts pending ones only.
    ASSERT_TRUE(scheduler.schedule_event_after(1, &events[2]).is_done());
    while (log->size() < 5) scheduler_t::wait("the last timer");
  });
  const run_result_t result = scheduler.run();
  ASSERT_TRUE(result.ok()) << result.report;
  EXPECT_EQ(*log, (std::vector<int>{2, 10, 1, 11, 12}));
}

// A timer-driven "network": a packet sent at tick t is delivered at t + 50
// by a timer; the receiver waits for it. Same seed => same trace hash.
std::uint64_t run_ping_pong(std::uint64_t seed) {
  scheduler_t scheduler(quiet_options(seed));
  auto inbox = std::make_unique<std::vector<int>>(2, 0);
  auto in_flight = std::make_unique<std::size_t>(0);
  scheduler.set_in_flight_count_fn([&] { return *in_flight; });
  auto send = [&](int target) {
    ++*in_flight;
    const lci::error_t error = scheduler.schedule_after(50, [&, target] {
      --*in_flight;
      ++(*inbox)[target];
      scheduler.trace(static_cast<std::uint64_t>(target));
    });
    EXPECT_TRUE(error.is_done());
  };
  for (int rank = 0; rank < 2; ++rank) {
    scheduler.spawn("rank" + std::to_string(rank), [&, rank] {
      for (int round = 1; round <= 10; ++round) {
        if (rank == 0 || round > 1) send(1 - rank);
        if (rank == 1 || round < 10) {
          while ((*inbox)[rank] < round) scheduler_t::wait("a message");
        }
      }
    });
  }
  const run_result_t result = scheduler.run();
  EXPECT_TRUE(result.ok()) << result.report;
  EXPECT_GE(result.ticks, 19u * 50);  // 19 one-way trips of 50 ticks
  return result.trace_hash;
}

TEST(SimTime, TimerNetworkIsDeterministic) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(40, 5)) {
    EXPECT_EQ(run_ping_pong(seed), run_ping_pong(seed));
  }
}

TEST(SimSeed, SeedFromEnvAndReplayCommand) {
  const char* saved = std::getenv(lci::sim::seed_env_name);
  const std::string saved_value = saved != nullptr ? saved : "";
  unsetenv(lci::sim::seed_env_name);
  EXPECT_EQ(lci::sim::seed_from_env(17), 17u);
  EXPECT_EQ(lci::sim::seeds_from_env(5, 3), (std::vector<std::uint64_t>{5, 6, 7}));
  setenv(lci::sim::seed_env_name, "12345", 1);
  EXPECT_EQ(lci::sim::seed_from_env(17), 12345u);
  EXPECT_EQ(lci::sim::seeds_from_env(5, 3), (std::vector<std::uint64_t>{12345}));
  setenv(lci::sim::seed_env_name, "0xff", 1);
  EXPECT_EQ(lci::sim::seed_from_env(17), 255u);
  setenv(lci::sim::seed_env_name, "18446744073709551615", 1);
  EXPECT_EQ(lci::sim::seed_from_env(17), ~std::uint64_t{0});
  EXPECT_EQ(lci::sim::replay_command(9, "./t --gtest_filter=X"),
            "LCI_SIM_SEED=9 ./t --gtest_filter=X");
  const std::string derived = lci::sim::replay_command(9, "");
  EXPECT_EQ(derived.rfind("LCI_SIM_SEED=9 ", 0), 0u) << derived;
  if (saved != nullptr) {
    setenv(lci::sim::seed_env_name, saved_value.c_str(), 1);
  } else {
    unsetenv(lci::sim::seed_env_name);
  }
}

TEST(SimSeedDeathTest, MalformedSeedIsRefused) {
  EXPECT_DEATH(
      {
        setenv(lci::sim::seed_env_name, "12abc", 1);
        (void)lci::sim::seed_from_env(1);
      },
      "not an unsigned 64-bit number");
}

// Fibers share one OS thread's C++ exception state unless the scheduler
// swaps it: "a" yields inside a catch block and during unwinding while "b"
// throws and catches its own; each must see only its own exceptions.
TEST(SimFiberExceptions, EachFiberKeepsItsOwnExceptionState) {
  scheduler_options_t options = quiet_options(8);
  options.policy = policy_t::round_robin;  // guarantees the overlap below
  scheduler_t scheduler(options);
  auto rethrown = std::make_unique<std::string>();
  auto b_uncaught = std::make_unique<std::vector<int>>();
  auto a_uncaught_in_dtor = std::make_unique<int>(-1);
  struct yields_in_destructor_t {
    int* seen;
    ~yields_in_destructor_t() {
      *seen = std::uncaught_exceptions();
      scheduler_t::yield();  // mid-unwind
    }
  };
  scheduler.spawn("a", [&] {
    try {
      try {
        yields_in_destructor_t guard{a_uncaught_in_dtor.get()};
        throw std::runtime_error("from a");
      } catch (...) {
        for (int i = 0; i < 3; ++i) scheduler_t::yield();  // inside the handler
        throw;                                              // must rethrow a's
      }
    } catch (const std::exception& error) {
      *rethrown = error.what();
    }
  });
  scheduler.spawn("b", [&] {
    for (int i = 0; i < 4; ++i) {
      b_uncaught->push_back(std::uncaught_exceptions());
      try {
        throw std::logic_error("from b");
      } catch (...) {
        scheduler_t::yield();
      }
    }
  });
  const run_result_t result = scheduler.run();
  ASSERT_TRUE(result.ok()) << result.report;
  EXPECT_EQ(*rethrown, "from a");
  EXPECT_EQ(*a_uncaught_in_dtor, 1);
  for (int count : *b_uncaught) EXPECT_EQ(count, 0);
}

}  // namespace
