// gtest helpers over run_ranks() (sim_harness.hpp): one multi-rank test body
// run over a sweep of seeds in deterministic mode and in concurrent mode.
//
//   lci::sim::expect_runs_ok(4, lci::sim::sweep_t{}, [](lci::sim::rank_env_t& env) {...});
//
// Seeds: seeds_from_env(seed_first, seeds_count), i.e. only LCI_SIM_SEED when
// it is set (the replay line a failure prints). Each failing run adds a
// gtest failure carrying its report (seed, world state, replay line).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"

namespace lci::sim {

struct sweep_t {
  std::uint64_t seed_first = 1;
  std::size_t seeds_count = 8;
  bool concurrent = true;           // also one run in concurrent mode
  std::function<void(run_options_t&)> configure;  // adjust options per run
};

// Returns the deterministic runs' reports (for further checks).
inline std::vector<run_report_t> expect_runs_ok(int ranks_count, const sweep_t& sweep,
                                                const std::function<void(rank_env_t&)>& body) {
  std::vector<run_report_t> reports;
  for (std::uint64_t seed : seeds_from_env(sweep.seed_first, sweep.seeds_count)) {
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
