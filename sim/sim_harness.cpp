#include "sim/sim_harness.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/run_threads.hpp"
#include "lci/util/spinlock.hpp"
#include "sim/sim_context.hpp"
#include "sim/sim_process.hpp"
#include "sim/sim_rank_host.hpp"
#include "sim/sim_seed.hpp"

namespace lci::sim {

namespace {

// Seeded multi-rank runs of this process, reported at its exit as
//   lci sim: <N> seeded multi-rank runs
// on stdout: .ci/run sums the lines of every test's log into the suite's
// seed count, which it prints and requires to be at least 1000. Printed
// from a static object's destructor: a process that aborts reports none
// (its test failed anyway).
class seeded_runs_t {
 public:
  ~seeded_runs_t() {
    const unsigned long count = count_.load(util::mo_relaxed);
    if (count > 0) std::printf("lci sim: %lu seeded multi-rank runs\n", count);
  }
  // relaxed: a statistic, read once at exit.
  void add() { count_.fetch_add(1, util::mo_relaxed); }

 private:
  util::atomic<unsigned long> count_{0};
};
seeded_runs_t g_seeded_runs;

using row_t = std::array<std::byte, allgather_bytes_max>;

// The watchdog looks at the progress count this often: an eighth of the
// quiet time (it fires between quiet and 9/8 quiet after the last
// progress), within these bounds.
constexpr std::chrono::milliseconds watchdog_period_min{1};
constexpr std::chrono::milliseconds watchdog_period_max{250};

// Deterministic and concurrent failure reports alike end with every rank's
// network state, photographed when the run stopped (world_t::describe_ranks()).
std::string with_network_state(const std::string& verdict, const std::string& world_state) {
  LCI_ASSERT(!verdict.empty(), "a failure report needs its verdict");
  return verdict + "  network state per rank:\n" + world_state;
}

}  // namespace

struct harness_state_t {
  harness_state_t(const run_options_t& options_in, int ranks_count)
      : options(options_in), world(options_in.world) {
    arrived.assign(static_cast<std::size_t>(ranks_count), 0);
    slots.resize(static_cast<std::size_t>(ranks_count));
    published.resize(static_cast<std::size_t>(ranks_count));
    for (int r = 0; r < ranks_count; ++r) {
      contexts.push_back(std::make_unique<sim_context_t>(world, r));
      backend::net_context_t* runtime_context = contexts.back().get();
      if (options.make_runtime_context) {
        runtime_contexts.push_back(options.make_runtime_context(rank_env_t(this, r)));
        LCI_ASSERT(runtime_contexts.back() != nullptr, "make_runtime_context returned null");
        runtime_context = runtime_contexts.back().get();
      }
      hosts.push_back(std::make_unique<rank_host_t>(*runtime_context, rank_env_t(this, r)));
    }
  }

  // Under barrier_lock: releases the barrier once every live rank arrived.
  void try_release_locked() {
    const int ranks = world.ranks_count();
    if (arrived_count + world.crashed_count() < ranks) return;
    for (int r = 0; r < ranks; ++r) {
      if (arrived[r] == 0 && !world.is_crashed(r)) return;
    }
    published = slots;
    arrived.assign(arrived.size(), 0);
    arrived_count = 0;
    ++generation;
    world.note_progress();
  }

  // Concurrent mode: the first failure stops the run (world_t::abort_run(),
  // as a failed fiber ends a deterministic run); later ones (ranks
  // unwinding, a watchdog racing a throw) are dropped. The world is
  // photographed first, while the ranks still stand where it found them.
  void stop_run(run_result_t::kind_t kind, const std::string& message) {
    LCI_ASSERT(world.mode() == world_mode_t::concurrent, "stop_run() in deterministic mode");
    LCI_ASSERT(kind != run_result_t::kind_t::finished, "stop_run() needs a failure");
    std::string snapshot = world.describe_ranks();
    {
      util::spinlock_guard_t guard(failure_lock);
      if (!failure.empty()) return;
      failure = message;
      failure_kind = kind;
      world_snapshot = std::move(snapshot);
    }
    world.abort_run();
  }

  // Concurrent mode: a rank thread returned (normally or not).
  void rank_returned() {
    world.note_progress();
    {
      std::lock_guard<std::mutex> guard(threads_lock);
      LCI_ASSERT(ranks_running > 0, "more ranks returned than ran");
      --ranks_running;
    }
    ranks_returned.notify_all();
  }

  const run_options_t options;
  world_t world;
  std::vector<std::unique_ptr<sim_context_t>> contexts;
  // make_runtime_context's, if set (destroyed after the hosts below).
  std::vector<std::unique_ptr<backend::net_context_t>> runtime_contexts;
  std::vector<std::unique_ptr<rank_host_t>> hosts;  // LCI runtimes of rank r live on hosts[r]
  std::string world_snapshot;  // the world when the run stopped (failure_lock in concurrent mode)

  util::spinlock_t barrier_lock;
  std::uint64_t generation = 0;
  std::vector<std::uint8_t> arrived;
  int arrived_count = 0;
  std::vector<row_t> slots;
  std::vector<row_t> published;

  util::spinlock_t failure_lock;
  std::string failure;  // concurrent mode: the first failure (stop_run)
  run_result_t::kind_t failure_kind = run_result_t::kind_t::finished;

  // Concurrent mode: rank threads still running; the watchdog sleeps on
  // ranks_returned between its looks.
  std::mutex threads_lock;
  std::condition_variable ranks_returned;
  int ranks_running = 0;  // under threads_lock
};

namespace {

// LCI_SIM_WATCHDOG_MS, or `fallback` when it is unset or empty.
std::uint64_t watchdog_quiet_ms_from_env(std::uint64_t fallback) {
  const char* text = std::getenv(watchdog_env_name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || *text < '0' || *text > '9' || value > watchdog_quiet_ms_max) {
    throw std::invalid_argument(std::string(watchdog_env_name) + "=\"" + text +
                                "\": not a count of milliseconds up to " +
                                std::to_string(watchdog_quiet_ms_max) +
                                " (0 turns the watchdog off)");
  }
  return static_cast<std::uint64_t>(value);
}

}  // namespace

run_options_t default_run_options(std::uint64_t seed, world_mode_t mode) {
  run_options_t options;
  options.world.seed = seed;
  options.mode = mode;
  apply_world_env(&options.world);
  options.watchdog_quiet_ms = watchdog_quiet_ms_from_env(options.watchdog_quiet_ms);
  return options;
}

// ---- rank_env_t ----

namespace {
[[noreturn]] void throw_sim_only(const char* call) {
  throw std::logic_error(std::string("rank_env_t::") + call +
                         ": the simulated world does not exist in process mode (a real "
                         "network, sim_process.hpp); check simulated() and skip");
}
}  // namespace

int rank_env_t::ranks_count() const {
  if (job_ != nullptr) return job_->ranks_count();
  return state_->world.ranks_count();
}
bool rank_env_t::deterministic() const {
  if (job_ != nullptr) return false;
  return state_->world.mode() == world_mode_t::deterministic;
}
backend::net_context_t& rank_env_t::context() {
  if (job_ != nullptr) return job_->context();
  return *state_->contexts[rank_];
}
world_t& rank_env_t::world() {
  if (job_ != nullptr) throw_sim_only("world()");
  return state_->world;
}

void rank_env_t::wait(const char* what) {
  if (job_ != nullptr) {
    std::this_thread::yield();  // let the peers on this machine run
    return;
  }
  state_->world.note_wait(rank_, what);
  if (deterministic()) {
    scheduler_t::wait(what);
    return;
  }
  if (state_->world.run_aborted()) throw run_aborted_t();
  std::this_thread::yield();
}

void rank_env_t::barrier() { allgather(nullptr, 0, nullptr); }

void rank_env_t::allgather(const void* mine, std::size_t bytes, void* all) {
  LCI_ASSERT(bytes <= allgather_bytes_max, "allgather: over allgather_bytes_max");
  if (job_ != nullptr) {
    job_->allgather(mine, bytes, all);
    return;
  }
  harness_state_t& s = *state_;
  std::uint64_t generation;
  {
    util::spinlock_guard_t guard(s.barrier_lock);
    LCI_ASSERT(s.arrived[rank_] == 0, "a rank entered the barrier twice");
    if (bytes > 0) std::memcpy(s.slots[rank_].data(), mine, bytes);
    s.arrived[rank_] = 1;
    ++s.arrived_count;
    generation = s.generation;
    s.try_release_locked();
  }
  for (;;) {
    {
      util::spinlock_guard_t guard(s.barrier_lock);
      if (s.generation == generation) s.try_release_locked();  // a peer may have crashed
      if (s.generation != generation) {
        for (std::size_t r = 0; r < s.published.size() && bytes > 0; ++r) {
          std::memcpy(static_cast<std::byte*>(all) + r * bytes, s.published[r].data(), bytes);
        }
        return;
      }
    }
    wait("barrier");
  }
}

void rank_env_t::crash() {
  if (job_ != nullptr) throw_sim_only("crash()");
  state_->world.crash_rank(rank_);
  throw rank_crashed_t(rank_);
}

void rank_env_t::run_threads(int threads_count, const std::function<void(int)>& body) {
  LCI_ASSERT(threads_count >= 1, "run_threads needs a thread");
  if (job_ != nullptr) {
    lci::util::run_threads(threads_count, body);
    return;
  }
  harness_state_t* state = state_;
  if (!deterministic()) {
    std::vector<std::thread> threads;
    for (int t = 0; t < threads_count; ++t) {
      rank_host_t* host = state->hosts[rank_].get();
      threads.emplace_back([state, &body, t, host] {
        rank_host_t::bind_current(host);
        try {
          body(t);
        } catch (const rank_crashed_t&) {  // the rank died: not a failure
        } catch (const run_aborted_t&) {   // stopped: the cause is recorded
        } catch (const std::exception& error) {
          state->stop_run(run_result_t::kind_t::fiber_failed,
                          std::string("a thread threw: ") + error.what());
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    return;
  }
  // Fibers may outlive this frame when the run is torn down: share by value.
  auto remaining = std::make_shared<int>(threads_count);
  auto shared_body = std::make_shared<std::function<void(int)>>(body);
  scheduler_t* scheduler = scheduler_t::current();
  LCI_ASSERT(scheduler != nullptr, "run_threads outside the simulation");
  rank_host_t* host = state->hosts[rank_].get();
  for (int t = 0; t < threads_count; ++t) {
    scheduler->spawn("rank " + std::to_string(rank_) + " thread " + std::to_string(t),
                     [remaining, shared_body, scheduler, t, host] {
                       rank_host_t::bind_current(host);
                       try {
                         (*shared_body)(t);
                       } catch (const rank_crashed_t&) {  // the rank died: not a failure
                       }
                       --*remaining;
                       scheduler->note_progress();
                     });
  }
  while (*remaining > 0) wait("this rank's threads");
}

// ---- run_ranks ----

namespace {

void run_body(harness_state_t& state, int rank, const std::function<void(rank_env_t&)>& body) {
  rank_env_t env(&state, rank);
  rank_host_t::bind_current(state.hosts[rank].get());
  try {
    body(env);
  } catch (const rank_crashed_t&) {  // counted through world_t::is_crashed
  }
  rank_host_t::bind_current(nullptr);
  state.world.note_wait(rank, "(returned)");
  state.world.rank_exited(rank);
}

std::string mode_name(world_mode_t mode) {
  return mode == world_mode_t::deterministic ? "deterministic" : "concurrent";
}

void run_deterministic(harness_state_t& state, const std::function<void(rank_env_t&)>& body,
                       run_report_t* report) {
  scheduler_options_t scheduler_options = state.options.scheduler;
  scheduler_options.seed = state.options.world.seed;
  scheduler_options.log_header = false;
  scheduler_options.log_failure = false;
  scheduler_t scheduler(scheduler_options);
  state.world.attach_scheduler(&scheduler);
  // Called when every fiber is quiet and when a failed run is described,
  // both before teardown: the moment to photograph the world.
  scheduler.set_in_flight_count_fn([&state] {
    state.world_snapshot = state.world.describe_ranks();
    return state.world.wire_count();
  });
  for (int r = 0; r < state.world.ranks_count(); ++r) {
    scheduler.spawn("rank " + std::to_string(r), [&state, &body, r] { run_body(state, r, body); });
  }
  const run_result_t result = scheduler.run();
  report->kind = result.kind;
  report->trace_hash = result.trace_hash;
  report->steps_count = result.steps_count;
  report->ticks = result.ticks;
  report->replay = result.replay;
  if (!result.ok()) report->report = with_network_state(result.report, state.world_snapshot);
}

// Concurrent mode: the watchdog fires (on run_ranks' thread, with
// threads_lock released): the run fails as a deadlock and stops.
void fire_watchdog(harness_state_t& state, std::chrono::steady_clock::duration quiet_for) {
  const std::uint64_t quiet_ms = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(quiet_for).count());
  LCI_ASSERT(state.options.watchdog_quiet_ms != 0, "the watchdog fired while off");
  LCI_ASSERT(quiet_ms >= state.options.watchdog_quiet_ms, "the watchdog fired early");
  state.stop_run(run_result_t::kind_t::deadlock,
                 "watchdog: nothing progressed anywhere for " + std::to_string(quiet_ms) +
                     " ms (watchdog_quiet_ms " +
                     std::to_string(state.options.watchdog_quiet_ms) + ", " +
                     watchdog_env_name +
                     "): no operation ended, no completion polled, no barrier released, "
                     "no rank returned");
  LCI_ASSERT(state.world.run_aborted(), "the watchdog fired and the run goes on");
}

// Concurrent mode, on run_ranks' thread, under `lock` (threads_lock): waits
// for the rank threads of a stopped run, which return at their next call
// into the simulator. One that has not after another quiet time may never
// call again: say so on stderr (run_ranks cannot report before the join),
// then keep waiting.
void wait_stopped_ranks(harness_state_t& state, std::unique_lock<std::mutex>& lock) {
  const auto all_returned = [&state] { return state.ranks_running == 0; };
  const std::uint64_t grace_ms = state.options.watchdog_quiet_ms;
  if (grace_ms != 0 &&
      !state.ranks_returned.wait_for(lock, std::chrono::milliseconds(grace_ms), all_returned)) {
    std::string failure;
    {
      util::spinlock_guard_t guard(state.failure_lock);
      failure = with_network_state(state.failure + "\n", state.world_snapshot);
    }
    std::fprintf(stderr,
                 "lci sim: the run was stopped (seed %llu) but %d rank thread(s) did not "
                 "return within %llu ms: they no longer call the simulator (a spin on their "
                 "own state?); waiting for them. The cause:\n  %s",
                 static_cast<unsigned long long>(state.options.world.seed), state.ranks_running,
                 static_cast<unsigned long long>(grace_ms), failure.c_str());
  }
  state.ranks_returned.wait(lock, all_returned);
}

// Concurrent mode, on run_ranks' thread: returns once every rank thread
// returned. Meanwhile the watchdog looks at the world's progress count
// every period and fires once it stood still for watchdog_quiet_ms.
void watch_ranks(harness_state_t& state) {
  using steady_t = std::chrono::steady_clock;
  const std::uint64_t quiet_ms = state.options.watchdog_quiet_ms;
  const steady_t::duration quiet = std::chrono::milliseconds(quiet_ms);
  // Off: still look now and then whether a rank's failure stopped the run.
  const steady_t::duration period =
      quiet_ms == 0 ? steady_t::duration(watchdog_period_max)
                    : std::clamp<steady_t::duration>(quiet / 8, watchdog_period_min,
                                                    watchdog_period_max);
  std::unique_lock<std::mutex> lock(state.threads_lock);
  std::uint64_t seen = state.world.progress_count();
  steady_t::time_point quiet_since = steady_t::now();
  // Ends: each turn waits at most a period; a stopped run goes to
  // wait_stopped_ranks, and a run that stays quiet is stopped.
  while (state.ranks_running > 0) {
    if (state.world.run_aborted()) {
      wait_stopped_ranks(state, lock);
      return;
    }
    state.ranks_returned.wait_for(lock, period);
    if (quiet_ms == 0 || state.ranks_running == 0) continue;
    const std::uint64_t count = state.world.progress_count();
    const steady_t::time_point now = steady_t::now();
    if (count != seen) {
      seen = count;
      quiet_since = now;
    } else if (now - quiet_since >= quiet) {
      lock.unlock();  // the photograph takes port locks; ranks may return meanwhile
      fire_watchdog(state, now - quiet_since);
      lock.lock();
    }
  }
}

void run_concurrent(harness_state_t& state, const std::function<void(rank_env_t&)>& body,
                    run_report_t* report) {
  LCI_ASSERT(state.options.watchdog_quiet_ms <= watchdog_quiet_ms_max,
             "watchdog_quiet_ms over watchdog_quiet_ms_max");
  const int ranks = state.world.ranks_count();
  state.ranks_running = ranks;  // before any rank thread exists
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&state, &body, r] {
      try {
        run_body(state, r, body);
      } catch (const run_aborted_t&) {  // stopped: the cause is recorded
      } catch (const std::exception& error) {
        state.stop_run(run_result_t::kind_t::fiber_failed,
                       "rank " + std::to_string(r) + " threw: " + error.what());
      }
      state.rank_returned();
    });
  }
  watch_ranks(state);
  for (std::thread& thread : threads) thread.join();
  LCI_ASSERT(state.ranks_running == 0, "a rank thread joined without returning");
  report->replay = replay_command(state.options.world.seed, state.options.scheduler.replay_command);
  if (state.failure.empty()) return;
  LCI_ASSERT(state.world.run_aborted(), "a failed concurrent run was not stopped");
  report->kind = state.failure_kind;
  const std::string verdict = "lci sim: " + std::string(get_kind_str(state.failure_kind)) +
                              " (concurrent mode, seed " +
                              std::to_string(state.options.world.seed) + ")\n  " +
                              state.failure + "\n";
  report->report = with_network_state(verdict, state.world_snapshot) +
                   "  concurrent mode: the seed fixes the wire's picks, not the threads' "
                   "interleaving (a rerun may pass; deterministic mode replays exactly)\n";
}

// Process mode (sim_process.hpp): the body once, as this process's rank.
run_report_t run_process(int ranks_count, const run_options_t& options,
                         const std::function<void(rank_env_t&)>& body) {
  run_report_t report;
  report.mode = world_mode_t::concurrent;
  report.seed = options.world.seed;
  process_job_t& job = process_job_t::get();
  if (ranks_count != job.ranks_count()) {
    report.ok = true;
    report.skipped = true;
    report.report = "written for " + std::to_string(ranks_count) + " ranks; this job has " +
                    std::to_string(job.ranks_count());
    return report;
  }
  rank_env_t env(&job, job.rank());
  try {
    body(env);
  } catch (const std::exception& error) {
    job.fail(options.name, error.what());
  } catch (...) {
    job.fail(options.name, "an exception of unknown type");
  }
  job.barrier();  // the next run starts once every rank finished this one
  report.ok = true;
  return report;
}

}  // namespace

run_report_t run_ranks(int ranks_count, const run_options_t& options_in,
                       const std::function<void(rank_env_t&)>& body) {
  if (process_mode()) return run_process(ranks_count, options_in, body);
  if (ranks_count >= 2) g_seeded_runs.add();
  run_options_t options = options_in;
  options.world.ranks_count = ranks_count;
  run_report_t report;
  report.mode = options.mode;
  report.seed = options.world.seed;
  if (options.log) {
    std::fprintf(stderr, "%s mode=%s\n", describe_world_options(options.world).c_str(),
                 mode_name(options.mode).c_str());
  }
  rank_host_t::install_lookup();
  auto state = std::make_unique<harness_state_t>(options, ranks_count);
  if (options.mode == world_mode_t::deterministic) {
    run_deterministic(*state, body, &report);
  } else {
    run_concurrent(*state, body, &report);
  }
  if (report.report.empty() && options.check_leftovers) {
    const std::string leftovers = state->world.describe_leftovers();
    if (!leftovers.empty()) {
      report.report = "lci sim: the run ended with work left in the network (seed " +
                      std::to_string(report.seed) + ")\n" + leftovers;
    }
  }
  for (int r = 0; r < ranks_count; ++r) {
    if (state->world.is_crashed(r)) report.crashed_ranks.push_back(r);
  }
  for (std::size_t k = 0; k < fault_kinds_count; ++k) {
    report.faults_injected[k] = state->world.faults_injected(static_cast<fault_kind_t>(k));
  }
  report.deliveries_count = state->world.deliveries_count();
  report.ok = report.report.empty();
  if (!report.ok) {
    if (!report.replay.empty() && report.report.find(report.replay) == std::string::npos) {
      report.report += "  replay: " + report.replay + "\n";
    }
    if (options.log) std::fprintf(stderr, "%s", report.report.c_str());
  }
  return report;
}

}  // namespace lci::sim
