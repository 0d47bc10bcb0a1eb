// Leaving (docs/design/lifecycle.md, "Leaving"): g_runtime_fina is collective.
// A rank that finalizes early waits in it until every rank has entered it,
// so a peer still progressing never sees the early rank's exit as a crash;
// a peer that crashed instead of finalizing is thrown by g_runtime_fina,
// naming it. Simulated ranks (over the simulated network, or with the ibv
// backend over an emulated fabric); as real processes: early_leaver.cpp.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/backends/ibv/ibv_emu_runtime.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::require;
using lci::runtime_test::round_trip;

// Progress calls (scheduling points) the last rank makes while the others
// finalize: fewer than the simulator takes for a deadlock when nothing
// moves.
constexpr int late_progress_calls = static_cast<int>(lci::sim::harness_quiet_waits_min / 2);

// Every rank of a run is a fiber of this process.
bool g_last_rank_finalizing = false;

// Rank 0 and the last rank exchange a message; the last rank then
// progresses a while before it finalizes, the others finalize at once.
// With `default_device` false the runtime starts without a default device,
// as runtimes built on LCI start it, and the exchange runs on a device of
// the program's own, freed before g_runtime_fina.
void early_leaver_body(lci::sim::rank_env_t& env, bool default_device) {
  lci::g_runtime_init_x().alloc_default_device(default_device)();
  lci::device_t device = default_device ? lci::device_t() : lci::alloc_device();
  const int me = lci::get_rank_me();
  const int last = lci::get_rank_n() - 1;
  if (me == last) g_last_rank_finalizing = false;
  env.barrier();  // the flag is reset before any rank can leave
  if (me == 0) round_trip(last, 1, device);
  if (me == last) {
    round_trip(0, 1, device);
    for (int i = 0; i < late_progress_calls; ++i) (void)lci::progress_x().device(device)();
    g_last_rank_finalizing = true;
  }
  if (!default_device) lci::free_device(&device);
  lci::g_runtime_fina();
  require(g_last_rank_finalizing, "g_runtime_fina returned on rank " + std::to_string(me) +
                                      " before the last rank entered it");
}

// (ranks, whether the runtime has a default device, whether the runtimes
// use the ibv backend over an emulated fabric instead of the simulated
// network)
using early_leavers_param_t = std::tuple<int, bool, bool>;
class EarlyLeavers : public ::testing::TestWithParam<early_leavers_param_t> {};

TEST_P(EarlyLeavers, WaitForTheLastRankInFinalize) {
  LCI_SIM_ONLY("a flag shared by the ranks; real processes: early_leaver.cpp");
  const auto [ranks, default_device, ibv] = GetParam();
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  if (ibv) {
    sweep.configure = [ranks = ranks](lci::sim::run_options_t& options) {
      (void)lci::ibv_test::use_emulated_ibv(&options, ranks);
    };
  }
  lci::sim::expect_runs_ok(ranks, sweep, [default_device = default_device](lci::sim::rank_env_t& env) {
    early_leaver_body(env, default_device);
  });
}

INSTANTIATE_TEST_SUITE_P(
    Leaving, EarlyLeavers,
    ::testing::Combine(::testing::Values(2, 4), ::testing::Bool(), ::testing::Bool()),
    [](const ::testing::TestParamInfo<early_leavers_param_t>& info) {
      return std::to_string(std::get<0>(info.param)) + "_ranks" +
             (std::get<1>(info.param) ? "" : "_no_default_device") +
             (std::get<2>(info.param) ? "_ibv_emulated" : "");
    });

constexpr int victim_rank = 2;

// The victim crashes where the others finalize: their g_runtime_fina
// tears the runtime down and throws an error naming it.
TEST(Leaving, CrashInsteadOfFinalizeIsThrownByFinalize) {
  LCI_SIM_ONLY("crashes a rank with rank_env_t::crash");
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 8;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  const auto reports = lci::sim::expect_runs_ok(3, sweep, [](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    env.barrier();
    if (env.rank() == victim_rank) env.crash();
    std::string error;
    try {
      lci::g_runtime_fina();
    } catch (const std::runtime_error& thrown) {
      error = thrown.what();
    }
    require(error.find("rank " + std::to_string(victim_rank) + " crashed") != std::string::npos,
            "g_runtime_fina did not report the crashed rank; it threw: \"" + error + "\"");
    require(lci::get_g_runtime().is_empty(), "g_runtime_fina left the runtime behind");
  });
  for (const auto& report : reports) EXPECT_EQ(report.crashed_ranks, std::vector<int>{victim_rank});
}

}  // namespace
