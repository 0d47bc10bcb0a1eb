// Small defaults: 256 simulated ranks in one process doing a ring exchange,
// well under 4 GiB; the peak memory is printed (per rank as well).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdio>

#include "sim/sim_harness.hpp"
#include "tests/sim/sim_network_workload.hpp"

namespace {

long peak_rss_kib() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;  // KiB on Linux
}

TEST(SimNetworkScale, Ring256RanksFitsInMemory) {
  constexpr int ranks_count = 256;
  const long before_kib = peak_rss_kib();
  lci::sim::run_options_t options = lci::sim::default_run_options(lci::sim::seed_from_env(9));
  const lci::sim::run_report_t report =
      lci::sim::run_ranks(ranks_count, options, [](lci::sim::rank_env_t& env) {
        lci::sim::testing::ring_exchange(env, 16, nullptr);
      });
  ASSERT_TRUE(report.ok) << report.report;
  EXPECT_EQ(report.deliveries_count, std::uint64_t{ranks_count} * 16);
  const long after_kib = peak_rss_kib();
  std::printf("256 ranks: peak RSS %ld KiB (before the run %ld KiB, growth %.1f KiB per rank), "
              "%llu scheduling steps, %llu ticks\n",
              after_kib, before_kib, double(after_kib - before_kib) / ranks_count,
              static_cast<unsigned long long>(report.steps_count),
              static_cast<unsigned long long>(report.ticks));
  EXPECT_LT(after_kib, 4L * 1024 * 1024);  // the requirement: well under 4 GiB
}

// Concurrent mode with many OS threads (one per rank).
TEST(SimNetworkScale, Ring32RanksConcurrent) {
  lci::sim::run_options_t options =
      lci::sim::default_run_options(3, lci::sim::world_mode_t::concurrent);
  options.log = false;
  const lci::sim::run_report_t report =
      lci::sim::run_ranks(32, options, [](lci::sim::rank_env_t& env) {
        lci::sim::testing::ring_exchange(env, 16, nullptr);
      });
  ASSERT_TRUE(report.ok) << report.report;
  EXPECT_EQ(report.deliveries_count, 32u * 16u);
}

}  // namespace
