// gtest helpers over run_ranks() (sim_harness.hpp): one multi-rank test body
// run over a sweep of seeds in deterministic mode and in concurrent mode.
//
//   lci::sim::expect_runs_ok(4, lci::sim::sweep_t{}, [](lci::sim::rank_env_t& env) {...});
//
// Seeds: seeds_from_env(seed_first, seeds_count), i.e. only LCI_SIM_SEED when
// it is set (the replay line a failure prints). Each failing run adds a
// gtest failure carrying its report (seed, world state, replay line).
//
// Process mode (sim_process.hpp; the test binary started by a launcher,
// e.g. `tools/lcirun -n 2 bazel-bin/tests/runtime/runtime_smoke_test`):
// expect_runs_ok runs the body once, as this process's rank (seeds and
// concurrent mode mean nothing there) and returns no reports; a test
// written for another rank count than the job's is skipped (GTEST_SKIP
// naming both); a gtest failure inside the body ends the process like an
// exception does ("FAILED <suite>.<test> on rank <r>"), since its peers
// would wait for it. Tests that need the simulator start with
// LCI_SIM_ONLY("why").
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_process.hpp"
#include "sim/sim_seed.hpp"

// Skips the calling test in process mode: it needs the simulated world
// (injected faults, crashes, world()). `reason` says what it needs.
#define LCI_SIM_ONLY(reason)                 \
  if (!::lci::sim::process_mode()) {         \
  } else                                     \
    GTEST_SKIP() << "needs the simulated network (" << reason << "); this is a real-network run"

namespace lci::sim {

struct sweep_t {
  std::uint64_t seed_first = 1;
  std::size_t seeds_count = 8;     // 0: no deterministic runs (concurrent mode only)
  bool concurrent = true;           // also one run in concurrent mode
  std::function<void(run_options_t&)> configure;  // adjust options per run
};

// Process mode: the one run of expect_runs_ok (see the top of this file).
inline void expect_process_run_ok(int ranks_count, const sweep_t& sweep,
                                  const std::function<void(rank_env_t&)>& body) {
  const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
  run_options_t options = default_run_options(sweep.seed_first, world_mode_t::concurrent);
  if (sweep.configure) sweep.configure(options);
  if (test != nullptr) options.name = std::string(test->test_suite_name()) + "." + test->name();
  const run_report_t report = run_ranks(ranks_count, options, [&body](rank_env_t& env) {
    body(env);
    if (::testing::Test::HasFailure()) throw std::runtime_error("a gtest assertion failed (above)");
  });
  if (report.skipped) GTEST_SKIP() << report.report;
  EXPECT_TRUE(report.ok) << report.report;
}

// Returns the deterministic runs' reports (for further checks); none in
// process mode.
inline std::vector<run_report_t> expect_runs_ok(int ranks_count, const sweep_t& sweep,
                                                const std::function<void(rank_env_t&)>& body) {
  std::vector<run_report_t> reports;
  if (process_mode()) {
    expect_process_run_ok(ranks_count, sweep, body);
    return reports;
  }
  const std::vector<std::uint64_t> seeds =
      sweep.seeds_count == 0 ? std::vector<std::uint64_t>{}
                             : seeds_from_env(sweep.seed_first, sweep.seeds_count);
  for (std::uint64_t seed : seeds) {
    run_options_t options = default_run_options(seed, world_mode_t::deterministic);
    if (sweep.configure) sweep.configure(options);
    reports.push_back(run_ranks(ranks_count, options, body));
    EXPECT_TRUE(reports.back().ok) << reports.back().report;
  }
  if (sweep.concurrent) {
    run_options_t options = default_run_options(sweep.seed_first, world_mode_t::concurrent);
    if (sweep.configure) sweep.configure(options);
    const run_report_t report = run_ranks(ranks_count, options, body);
    EXPECT_TRUE(report.ok) << report.report;
  }
  return reports;
}

}  // namespace lci::sim
