// Scheduling, determinism, bounds and failure reports of lci::sim::scheduler_t.
#include "sim/sim_scheduler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <cstdlib>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "lci/util/spinlock.hpp"

namespace {

using lci::sim::fiber_id_t;
using lci::sim::policy_t;
using lci::sim::run_result_t;
using lci::sim::scheduler_options_t;
using lci::sim::scheduler_t;
using kind_t = run_result_t::kind_t;

scheduler_options_t quiet_options(std::uint64_t seed) {
  scheduler_options_t options;
  options.seed = seed;
  options.log_header = false;
  options.log_failure = false;
  return options;
}

struct logged_run_t {
  std::vector<int> log;
  run_result_t result;
};

// Four fibers append (fiber, i) to one shared log with a yield after each.
logged_run_t run_logging_workload(const scheduler_options_t& options) {
  constexpr int fibers_count = 4;
  constexpr int entries_per_fiber = 8;
  auto log = std::make_unique<std::vector<int>>();
  scheduler_t scheduler(options);
  for (int f = 0; f < fibers_count; ++f) {
    scheduler.spawn("writer" + std::to_string(f), [&log, f] {
      for (int i = 0; i < entries_per_fiber; ++i) {
        log->push_back(f * 100 + i);
        scheduler_t::yield();
      }
    });
  }
  run_result_t result = scheduler.run();
  // Conservation: every entry exactly once, each fiber's entries in order.
  EXPECT_EQ(log->size(), std::size_t{fibers_count * entries_per_fiber});
  std::vector<int> next(fibers_count, 0);
  for (int entry : *log) EXPECT_EQ(entry % 100, next[entry / 100]++);
  return logged_run_t{*log, std::move(result)};
}

TEST(SimScheduler, RunsEveryFiberToCompletion) {
  const logged_run_t run = run_logging_workload(quiet_options(1));
  EXPECT_TRUE(run.result.ok()) << run.result.report;
  EXPECT_EQ(run.result.kind, kind_t::finished);
  // Each fiber runs once per log entry plus once to return.
  EXPECT_EQ(run.result.steps_count, 4u * (8 + 1));
}

TEST(SimScheduler, SameSeedSameInterleavingAndHash) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(100, 10)) {
    const logged_run_t first = run_logging_workload(quiet_options(seed));
    const logged_run_t second = run_logging_workload(quiet_options(seed));
    ASSERT_TRUE(first.result.ok()) << first.result.report;
    EXPECT_EQ(first.log, second.log) << "seed " << seed;
    EXPECT_EQ(first.result.trace_hash, second.result.trace_hash) << "seed " << seed;
  }
}

// 32 entries from 4 fibers have 32!/(8!)^4 (about 1e17) interleavings, so 20
// random ones coincide with negligible probability: allow at most 2 repeats.
// The hash must separate exactly the logs that differ.
TEST(SimScheduler, DifferentSeedsDifferentInterleavings) {
  constexpr int seeds_count = 20;
  std::set<std::vector<int>> logs;
  std::set<std::uint64_t> hashes;
  for (std::uint64_t seed = 0; seed < seeds_count; ++seed) {
    const logged_run_t run = run_logging_workload(quiet_options(seed));
    ASSERT_TRUE(run.result.ok()) << run.result.report;
    logs.insert(run.log);
    hashes.insert(run.result.trace_hash);
  }
  EXPECT_GE(logs.size(), std::size_t{seeds_count - 2});
  EXPECT_EQ(hashes.size(), logs.size());
}

// Round robin takes the live fibers in turn: the log is fiber 0,1,2 per round.
TEST(SimScheduler, RoundRobinTakesFibersInTurn) {
  scheduler_options_t options = quiet_options(5);
  options.policy = policy_t::round_robin;
  auto log = std::make_unique<std::vector<int>>();
  scheduler_t scheduler(options);
  for (int f = 0; f < 3; ++f) {
    scheduler.spawn("rr" + std::to_string(f), [&log, f] {
      for (int i = 0; i < 3; ++i) {
        log->push_back(f);
        scheduler_t::yield();
      }
    });
  }
  ASSERT_TRUE(scheduler.run().ok());
  std::vector<int> expected;
  for (int round = 0; round < 3; ++round) {
    for (int f = 0; f < 3; ++f) expected.push_back(f);
  }
  EXPECT_EQ(*log, expected);
}

TEST(SimScheduler, FibersSpawnFibers) {
  constexpr int nodes_count = 64;
  auto ran = std::make_unique<std::vector<int>>(nodes_count, 0);
  auto ids = std::make_unique<std::vector<fiber_id_t>>(nodes_count);
  scheduler_t scheduler(quiet_options(9));
  // A binary tree of spawns: fiber k spawns 2k+1 and 2k+2 while in range.
  std::function<void(int)> node = [&](int k) {
    ++(*ran)[k];
    EXPECT_EQ(scheduler_t::current(), &scheduler);
    (*ids)[k] = scheduler_t::current_fiber();
    for (int child : {2 * k + 1, 2 * k + 2}) {
      if (child < nodes_count) {
        scheduler.spawn("node" + std::to_string(child), [&node, child] { node(child); });
      }
      scheduler_t::yield();
    }
  };
  scheduler.spawn("node0", [&node] { node(0); });
  const run_result_t result = scheduler.run();
  EXPECT_TRUE(result.ok()) << result.report;
  EXPECT_EQ(scheduler.fibers_count(), std::size_t{nodes_count});
  EXPECT_EQ(scheduler.fibers_live_count(), 0u);
  for (int count : *ran) EXPECT_EQ(count, 1);
  // Every fiber saw its own id: all distinct, all below the fiber count.
  std::set<fiber_id_t> distinct(ids->begin(), ids->end());
  EXPECT_EQ(distinct.size(), std::size_t{nodes_count});
  EXPECT_LT(*distinct.rbegin(), fiber_id_t{nodes_count});
}

TEST(SimScheduler, YieldOutsideASimulationIsANoOp) {
  EXPECT_EQ(scheduler_t::current(), nullptr);
  EXPECT_EQ(scheduler_t::current_fiber(), lci::sim::fiber_id_invalid);
  scheduler_t::yield();
  scheduler_t::wait("nothing");
  scheduler_t::sleep_ticks(10);
  SUCCEED();
}

// ---- call_point(): the end of a backend call ----

// Lengths of the runs of equal consecutive entries of `log`.
std::vector<std::size_t> run_lengths(const std::vector<int>& log) {
  std::vector<std::size_t> lengths;
  for (std::size_t i = 0; i < log.size(); ++i) {
    if (i == 0 || log[i] != log[i - 1]) lengths.push_back(0);
    ++lengths.back();
  }
  return lengths;
}

// Two fibers log an entry before each changing call. Round robin turns the
// log into turns: a turn is 1..run_budget_max changing calls of one fiber
// (the last of them switches), and its length is drawn from the seed.
std::vector<int> run_changing_calls(std::uint64_t seed, std::uint32_t run_budget_max,
                                    run_result_t* result) {
  constexpr int calls_per_fiber = 200;
  scheduler_options_t options = quiet_options(seed);
  options.policy = policy_t::round_robin;
  options.run_budget_max = run_budget_max;
  auto log = std::make_unique<std::vector<int>>();
  scheduler_t scheduler(options);
  for (int f = 0; f < 2; ++f) {
    scheduler.spawn("caller" + std::to_string(f), [&log, f] {
      for (int i = 0; i < calls_per_fiber; ++i) {
        log->push_back(f);
        scheduler_t::call_point("net test", true);
      }
    });
  }
  *result = scheduler.run();
  EXPECT_EQ(log->size(), std::size_t{2 * calls_per_fiber});
  return *log;
}

TEST(SimSchedulerCallPoint, ChangingCallsGoOnForTheRunBudget) {
  constexpr std::uint32_t run_budget_max = 8;
  std::set<std::vector<int>> logs;
  for (std::uint64_t seed : lci::sim::seeds_from_env(300, 4)) {
    run_result_t result;
    const std::vector<int> log = run_changing_calls(seed, run_budget_max, &result);
    ASSERT_TRUE(result.ok()) << result.report;
    std::vector<std::size_t> lengths = run_lengths(log);
    // Once one fiber has finished, the other's turns run together: drop that
    // tail. (A fiber's last turn may also be cut short by its end.)
    lengths.pop_back();
    for (std::size_t length : lengths) EXPECT_LE(length, run_budget_max) << "seed " << seed;
    EXPECT_EQ(*std::max_element(lengths.begin(), lengths.end()), run_budget_max);
    EXPECT_GE(std::set<std::size_t>(lengths.begin(), lengths.end()).size(), 4u);
    // Fewer switches than calls, but every call costs a step's virtual time.
    EXPECT_LT(result.steps_count, log.size() / 2);
    EXPECT_GE(result.ticks, log.size());
    logs.insert(log);
  }
  EXPECT_EQ(logs.size(), 4u);  // the budgets come from the seed
}

TEST(SimSchedulerCallPoint, BudgetOfOneSwitchesAtEveryChangingCall) {
  run_result_t result;
  const std::vector<int> log = run_changing_calls(5, 1, &result);
  ASSERT_TRUE(result.ok()) << result.report;
  for (std::size_t length : run_lengths(log)) EXPECT_EQ(length, 1u);
}

// A call that changed nothing is a wait: a fiber spinning on quiet calls is
// found deadlocked after quiet_waits_min of them, naming the call.
TEST(SimSchedulerCallPoint, QuietCallsAreWaits) {
  const scheduler_options_t options = quiet_options(6);
  scheduler_t scheduler(options);
  scheduler.spawn("poller", [] {
    for (;;) scheduler_t::call_point("net poll_comp", false);
  });
  const run_result_t result = scheduler.run();
  EXPECT_EQ(result.kind, kind_t::deadlock) << result.report;
  EXPECT_NE(result.report.find("waits for \"net poll_comp\""), std::string::npos) << result.report;
  EXPECT_EQ(result.steps_count, options.quiet_waits_min);
}

// With nothing pending anywhere, a fiber that polls idle a bounded number
// of times and then acts on its own is no deadlock while its count stays
// under deadlock_waits_min; one that never acts is still found, after
// deadlock_waits_min waits.
TEST(SimSchedulerCallPoint, BoundedIdlePollingIsNoDeadlock) {
  constexpr int idle_polls = 100;
  for (const bool acts : {true, false}) {
    scheduler_options_t options = quiet_options(7);
    options.deadlock_waits_min = 2 * idle_polls;
    scheduler_t scheduler(options);
    bool acted = false;
    scheduler.spawn("waiter", [&acted] {
      while (!acted) scheduler_t::wait("the poller to act");
    });
    scheduler.spawn("poller", [&scheduler, &acted, acts] {
      for (int i = 0; i < idle_polls || !acts; ++i) scheduler_t::call_point("net poll_comp", false);
      acted = true;
      scheduler.note_progress();
    });
    const run_result_t result = scheduler.run();
    if (acts) {
      EXPECT_TRUE(result.ok()) << result.report;
    } else {
      EXPECT_EQ(result.kind, kind_t::deadlock) << result.report;
      EXPECT_NE(result.report.find(std::to_string(options.deadlock_waits_min) + " waits each"),
                std::string::npos)
          << result.report;
    }
  }
}

// Timers that come due while a fiber goes on fire at its call points, as the
// scheduler loop would fire them, not only at its next switch: after every
// call exactly the timers of ticks <= now have fired.
TEST(SimSchedulerCallPoint, DueTimersFireAtCallsThatGoOn) {
  constexpr std::uint64_t timers_count = 50;
  constexpr int calls_count = 100;
  scheduler_options_t options = quiet_options(7);
  options.run_budget_max = 64;
  scheduler_t scheduler(options);
  auto fired_ticks = std::make_unique<std::vector<std::uint64_t>>();
  scheduler.spawn("caller", [&] {
    const std::uint64_t start = scheduler.now_ticks();
    for (std::uint64_t t = 1; t <= timers_count; ++t) {
      const lci::error_t error = scheduler.schedule_at(start + t, [&, t] {
        EXPECT_EQ(scheduler_t::current_fiber(), lci::sim::fiber_id_invalid);
        fired_ticks->push_back(start + t);
      });
      ASSERT_TRUE(error.is_done());
    }
    for (int i = 0; i < calls_count; ++i) {
      scheduler_t::call_point("net test", true);
      const std::uint64_t now = scheduler.now_ticks();
      const std::uint64_t due = std::min(timers_count, now - start);
      ASSERT_EQ(fired_ticks->size(), due) << "call " << i << " at tick " << now;
    }
  });
  const run_result_t result = scheduler.run();
  ASSERT_TRUE(result.ok()) << result.report;
  EXPECT_TRUE(std::is_sorted(fired_ticks->begin(), fired_ticks->end()));
  EXPECT_LT(result.steps_count, std::uint64_t{calls_count} / 4);  // most calls went on
}

// Independent schedulers on separate OS threads (the concurrency a
// scheduler supports): same seed => same log and hash on every thread.
TEST(SimSchedulerStress, IndependentSchedulersOnFourThreads) {
  constexpr int threads_count = 4;
  constexpr int runs_per_thread = 20;
  auto hashes = std::make_unique<std::vector<std::vector<std::uint64_t>>>(threads_count);
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&hashes, t] {
      for (int run = 0; run < runs_per_thread; ++run) {
        const logged_run_t result = run_logging_workload(quiet_options(1000 + run));
        (*hashes)[t].push_back(result.result.trace_hash);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 1; t < threads_count; ++t) EXPECT_EQ((*hashes)[t], (*hashes)[0]);
}

// 256 fibers through a bounded queue: producers wait while it is full,
// consumers while it is empty; each push/pop is progress. No seed may end in
// a false deadlock, and every item is consumed exactly once.
TEST(SimSchedulerStress, ManyFibersNoFalseDeadlock) {
  constexpr int producers_count = 128;
  constexpr int items_per_producer = 8;
  constexpr std::size_t queue_max = 4;
  for (std::uint64_t seed : lci::sim::seeds_from_env(200, 5)) {
    scheduler_t scheduler(quiet_options(seed));
    auto queue = std::make_unique<std::vector<int>>();
    auto consumed = std::make_unique<std::vector<int>>(producers_count * items_per_producer, 0);
    for (int p = 0; p < producers_count; ++p) {
      scheduler.spawn("producer" + std::to_string(p), [&, p] {
        for (int i = 0; i < items_per_producer; ++i) {
          while (queue->size() >= queue_max) scheduler_t::wait("queue not full");
          queue->push_back(p * items_per_producer + i);
          scheduler.note_progress();
        }
      });
      scheduler.spawn("consumer" + std::to_string(p), [&] {
        for (int i = 0; i < items_per_producer; ++i) {
          while (queue->empty()) scheduler_t::wait("queue not empty");
          ++(*consumed)[queue->back()];
          queue->pop_back();
          scheduler.note_progress();
        }
      });
    }
    const run_result_t result = scheduler.run();
    ASSERT_TRUE(result.ok()) << result.report;
    EXPECT_TRUE(queue->empty());
    for (int count : *consumed) ASSERT_EQ(count, 1);
  }
}

}  // namespace
