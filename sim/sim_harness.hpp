// run_ranks(): write a multi-rank test once, run it on a simulated world in
// deterministic mode (every rank, and every thread a rank starts, a fiber of
// one seeded scheduler_t) or in concurrent mode (real OS threads) — or, in
// process mode, once per process of a job started by a launcher, over a real
// network (sim_process.hpp: `tools/lcirun -n 2 bazel-bin/tests/...`).
//
//   lci::sim::run_options_t options = lci::sim::default_run_options(seed);
//   lci::sim::run_report_t report = lci::sim::run_ranks(4, options,
//       [](lci::sim::rank_env_t& env) {
//         auto device = env.context().alloc_device({});
//         ... post, then `while (!done) { device->poll_comp(...); env.wait("x"); }`
//       });
//   EXPECT_TRUE(report.ok) << report.report;   // names seed + replay line
//
// A run is ok when every rank returned (or crashed, see rank_env_t::crash),
// nothing threw, and — unless check_leftovers is off — nothing is left in
// the network (ops not completed, messages not received, completions not
// polled). Deadlock (deterministic mode) reports every fiber's wait and
// every rank's network state.
//
// Concurrent mode's watchdog: run_ranks' own thread watches the world's
// progress count (world_t::progress_count(): an operation ended at its
// initiator, a poll returned completions, a device allocated, a barrier
// released, a rank returned, ...). When it has not moved for
// watchdog_quiet_ms, the run fails as a deadlock: the report is the one
// deterministic mode prints (every rank's wait and network state, taken
// then, the seed, the replay line), and the run is stopped
// (world_t::abort_run()): every rank's next backend call or wait() throws
// run_aborted_t, so ranks spinning in progress() or backend calls unwind
// and are joined. A rank that throws stops the run the same way at once,
// as a failed fiber ends a deterministic run. A long run that keeps
// completing things is never stopped. A rank that never calls into the
// simulator again (it spins on its own state) cannot be stopped: after
// another watchdog_quiet_ms the report is printed to stderr and run_ranks
// goes on waiting to join it.
//
// Process mode (sim_process.hpp says when and how): the body runs once, as
// this process's rank; a run for another rank count than the job's is
// skipped (report.skipped); a body that throws ends the process with
// "FAILED <options.name> on rank <r>" (its peers would wait for it). Bodies
// that need the simulator (world(), crash(), injected faults) check
// rank_env_t::simulated() or process_mode() and skip. Seeds, modes, faults,
// leftovers checks and the scheduler options mean nothing there.
//
// Thread safety: run_ranks() may run concurrently with other run_ranks()
//                calls on other threads (each has its own world; not in
//                process mode: one job, one run at a time). A
//                rank_env_t belongs to its rank: barrier()/allgather() by
//                one thread of the rank at a time; wait()/yield() from any.
// Blocking:      run_ranks() blocks until the run ends (bounded by the
//                scheduler's steps_max/ticks_max; in concurrent mode, once
//                nothing progresses, by watchdog_quiet_ms, unless a rank
//                never calls the simulator again; in process mode by the
//                launcher's timeout).
// Allocation:    per run: the world, contexts, fibers or threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "sim/sim_faults.hpp"
#include "sim/sim_scheduler.hpp"
#include "sim/sim_world.hpp"

namespace lci::sim {

inline constexpr std::size_t allgather_bytes_max = 64;

// Deadlock verdict: backend calls are wait() points (sim_device.hpp), so a
// rank making a bounded burst of calls that change nothing (polling a few
// times to drain) looks quiet; the harness gives each fiber this many such
// waits before a verdict (the scheduler's default is 4).
inline constexpr std::uint32_t harness_quiet_waits_min = 64;
// With no timer pending and nothing in flight, the waits each fiber gets
// before the verdict: a rank may poll idle a bounded while before it acts
// on its own, as programs do on a real network (polling until messages
// have come in, then posting their receives; //tests/runtime:
// cross_device_test polls 1000 times, 2 devices each). At 64 such a
// program was judged deadlocked in every seed while it passed as real
// processes.
inline constexpr std::uint32_t harness_deadlock_waits_min = 1u << 14;

// Concurrent mode's watchdog (see the top of this file): the quiet time
// after which a run that completes nothing anywhere fails. 10 s: the
// longest quiet stretch measured in a healthy run was 856 ms (TSan, 2
// loaded cores, 4 ranks x 4 threads filling and checking 1 MiB buffers
// between messages; the median run's is 5 ms; docs/design/sim_network.md,
// "Concurrent mode"), so 10 s is over 10x clear of a false alarm, while a
// deadlock is still reported well inside a small test's 60 s and the 30 s
// a user waits before calling a run hung. A rank that computes longer than
// that without any network event (while all others wait) needs a larger
// value. LCI_SIM_WATCHDOG_MS=<ms> overrides it (default_run_options); 0
// turns it off (a deadlocked run then hangs, e.g. for a debugger).
inline constexpr std::uint64_t watchdog_quiet_ms_default = 10000;
// A week: larger values are refused (they would overflow the clock's
// nanoseconds); use 0 for "never".
inline constexpr std::uint64_t watchdog_quiet_ms_max = 7ull * 24 * 3600 * 1000;
inline constexpr const char* watchdog_env_name = "LCI_SIM_WATCHDOG_MS";

inline scheduler_options_t harness_scheduler_options() {
  scheduler_options_t options;
  options.quiet_waits_min = harness_quiet_waits_min;
  options.deadlock_waits_min = harness_deadlock_waits_min;
  return options;
}

class rank_env_t;

struct run_options_t {
  world_options_t world;  // world.seed is the run's seed; ranks_count is set by run_ranks
  world_mode_t mode = world_mode_t::deterministic;
  scheduler_options_t scheduler = harness_scheduler_options();  // seed: world.seed
  bool check_leftovers = true;
  // Concurrent mode: fail once nothing progressed for this long; 0: never.
  // At most watchdog_quiet_ms_max.
  std::uint64_t watchdog_quiet_ms = watchdog_quiet_ms_default;
  bool log = true;  // print the world's parameters first and failures to stderr
  // The network the LCI runtimes of a rank use (rank_host_t::net_context()):
  // unset, the rank's simulated context; set, what this returns for the
  // rank (e.g. another backend over an emulated device), called once per
  // rank before the run starts, on run_ranks' thread. The context lives
  // until the run's hosts are gone. rank_env_t::context() stays simulated.
  std::function<std::unique_ptr<backend::net_context_t>(rank_env_t env)> make_runtime_context;
  std::string name = "run_ranks body";  // process mode: names the run in a failure line
};

// world.seed = seed, environment applied (LCI_SIM_FAULT_*, LCI_SIM_TRACE,
// ...: apply_world_env) and LCI_SIM_WATCHDOG_MS (a malformed value throws
// std::invalid_argument naming it).
run_options_t default_run_options(std::uint64_t seed,
                                  world_mode_t mode = world_mode_t::deterministic);

struct run_report_t {
  bool ok = false;
  bool skipped = false;  // process mode: the job has another rank count (see report)
  world_mode_t mode = world_mode_t::deterministic;
  std::uint64_t seed = 0;
  // Concurrent mode: deadlock when the watchdog fired, fiber_failed when a
  // rank (or a thread of one) threw.
  run_result_t::kind_t kind = run_result_t::kind_t::finished;
  std::uint64_t trace_hash = 0;  // deterministic mode: equal seeds, equal hashes
  std::uint64_t steps_count = 0;
  std::uint64_t ticks = 0;
  std::vector<int> crashed_ranks;
  std::uint64_t faults_injected[fault_kinds_count] = {};
  std::uint64_t deliveries_count = 0;
  std::string report;  // "" when ok; else the cause, seed, world state, replay line;
                       // skipped: why
  std::string replay;  // LCI_SIM_SEED=<seed> <command> (concurrent mode: the same
                       // seed, not the same interleaving)
};

struct harness_state_t;
class process_job_t;

class rank_env_t {
 public:
  rank_env_t(harness_state_t* state, int rank) : state_(state), rank_(rank) {}
  // Process mode: this process's rank of the job.
  rank_env_t(process_job_t* job, int rank) : job_(job), rank_(rank) {}
  int rank() const { return rank_; }
  int ranks_count() const;
  bool deterministic() const;
  // False in process mode, where world() and crash() throw std::logic_error.
  bool simulated() const { return job_ == nullptr; }
  backend::net_context_t& context();
  world_t& world();

  // A scheduling point while waiting for `what` (a literal; deadlock
  // reports show it). Concurrent mode: an OS yield; throws run_aborted_t
  // once the run was stopped. Process mode: an OS yield.
  void wait(const char* what);
  // All live ranks meet (out of band, not through the network; in process
  // mode through the bootstrap, see sim_process.hpp "Blocking").
  void barrier();
  // Out-of-band allgather: all[r * bytes ...] gets rank r's `mine`.
  void allgather(const void* mine, std::size_t bytes, void* all);
  // Runs body(0..threads_count-1) as fibers (deterministic) or OS threads
  // (concurrent, process mode) of this rank and returns when all have
  // returned.
  void run_threads(int threads_count, const std::function<void(int)>& body);
  // Crashes this rank: peers see peer_crashed; throws rank_crashed_t.
  [[noreturn]] void crash();

 private:
  harness_state_t* state_ = nullptr;  // simulated
  process_job_t* job_ = nullptr;      // process mode
  int rank_;
};

run_report_t run_ranks(int ranks_count, const run_options_t& options,
                       const std::function<void(rank_env_t&)>& body);

}  // namespace lci::sim
