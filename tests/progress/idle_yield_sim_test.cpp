// progress() asks its host to yield once per polls_before_yield() empty
// calls in a row on a thread (lci/progress/idle_yield.hpp); the simulator's
// host counts the requests instead of yielding (sim/sim_rank_host.hpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "lci.hpp"
#include "lci/progress/idle_yield.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_rank_host.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

constexpr std::uint64_t runs_of_empty_calls = 5;

using lci::runtime_test::require;

// One rank alone: once its receives are posted, no call has anything to do.
void empty_calls_body(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  lci::sim::rank_host_t* const host = lci::sim::rank_host_t::current();
  require(host != nullptr, "a simulated rank has a rank host");
  const std::uint32_t polls = lci::detail::polls_before_yield();
  // The first calls post the device's receives.
  while (lci::progress().is_done()) {
  }
  // Fewer than `polls` empty calls are counted before this point (the last
  // one above at least), so exactly runs_of_empty_calls runs end below.
  const std::uint64_t before = host->idle_yields();
  for (std::uint64_t i = 0; i < runs_of_empty_calls * polls; ++i) {
    require(lci::progress().is_retry(), "a rank alone found something to do");
  }
  const std::uint64_t expected = polls == 0 ? 0 : runs_of_empty_calls;
  require(host->idle_yields() - before == expected,
          "yields asked for: " + std::to_string(host->idle_yields() - before) + ", expected " +
              std::to_string(expected) + " after " + std::to_string(runs_of_empty_calls * polls) +
              " empty progress calls");
  lci::g_runtime_fina();
}

TEST(IdleYieldSim, ProgressAsksItsHostToYieldOncePerRunOfEmptyCalls) {
  LCI_SIM_ONLY("counts the simulated host's yield requests");
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [](lci::sim::run_options_t& options) {
    // Every empty call is a quiet wait; a rank alone would look deadlocked
    // after harness_quiet_waits_min of them.
    options.scheduler.quiet_waits_min = 1u << 20;
  };
  lci::sim::expect_runs_ok(1, sweep, empty_calls_body);
}

// A malformed LCI_PROGRESS_POLLS_BEFORE_YIELD is refused by the calls that
// start LCI, before any progress() reads it.
void malformed_setting_body(lci::sim::rank_env_t&) {
  const std::string variable = "LCI_PROGRESS_POLLS_BEFORE_YIELD";
  struct start_t {
    const char* name;
    void (*run)();
  };
  const start_t starts[] = {
      {"g_runtime_init", [] { lci::g_runtime_init(); }},
      {"alloc_runtime",
       [] {
         lci::runtime_t runtime = lci::alloc_runtime();
         lci::free_runtime(&runtime);
       }},
  };
  for (const start_t& start : starts) {
    try {
      start.run();
    } catch (const std::invalid_argument& e) {
      require(std::string(e.what()).find(variable) != std::string::npos,
              std::string(start.name) + " refused it without naming the variable: " + e.what());
      continue;
    }
    require(false, std::string(start.name) + " took " + variable + "=many");
  }
  require(lci::get_g_runtime().is_empty(), "a refused g_runtime_init left a runtime");
}

TEST(IdleYieldSim, AMalformedSettingIsRefusedWhenTheRuntimeStarts) {
  LCI_SIM_ONLY("runs a rank's runtime start in the simulator");
  struct malformed_setting_t {
    malformed_setting_t() { setenv("LCI_PROGRESS_POLLS_BEFORE_YIELD", "many", 1); }
    ~malformed_setting_t() { unsetenv("LCI_PROGRESS_POLLS_BEFORE_YIELD"); }
  } setting;
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 1;
  lci::sim::expect_runs_ok(1, sweep, malformed_setting_body);
}

}  // namespace
