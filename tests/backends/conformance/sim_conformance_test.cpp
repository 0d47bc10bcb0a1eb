// The backend conformance suite against the simulated network: several seeds
// in deterministic mode, the same with every survivable fault on, and
// concurrent mode (real threads; run it under --config=tsan); under each
// provider profile (sim/sim_profile.hpp: default, shm, tcp), the profiles
// of real providers with fewer seeds. Case names start with the profile.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_profile.hpp"
#include "sim/sim_seed.hpp"
#include "sim/sim_world.hpp"
#include "tests/backends/conformance/conformance.hpp"
#include "tests/backends/conformance/sim_rank_ctx.hpp"

namespace lci::conformance {
namespace {

// The simulated network's own context.
class sim_network_rank_ctx_t final : public sim_rank_ctx_t {
 public:
  using sim_rank_ctx_t::sim_rank_ctx_t;
  backend::net_context_t& context() override { return env().context(); }
};

// Every fault a correct runtime must survive (crash excluded: it ends ranks).
void enable_survivable_faults(sim::world_options_t* world) {
  for (sim::fault_kind_t kind :
       {sim::fault_kind_t::send_queue_full, sim::fault_kind_t::no_recv_buffer,
        sim::fault_kind_t::cq_pressure, sim::fault_kind_t::lock_busy,
        sim::fault_kind_t::reorder, sim::fault_kind_t::delay_spike,
        sim::fault_kind_t::registration_failure}) {
    world->faults.rate(kind) = 0.1;
  }
}

// Why a profile skips a test ("": it runs it).
std::string profile_skip_reason(sim::profile_kind_t profile, const std::string& test_name) {
  const bool checks_keys = sim::get_provider_profile(profile).checks_remote_keys;
  if (test_name == "RmaProtectionFaults" && !checks_keys) {
    return "the shm profile does not check remote keys, as libfabric 1.17's shm does not: a "
           "refused put never completes and a get reads unchecked "
           "(tests/sim/sim_profile_test.cpp checks that instead; docs/backends/ofi.md)";
  }
  return "";
}

backend_case_t sim_case(sim::profile_kind_t profile, const std::string& name, std::uint64_t seed,
                        sim::world_mode_t mode, bool faults) {
  backend_case_t result;
  result.name = std::string(sim::get_profile_name(profile)) + "_" + name;
  result.skip_reason = [profile](const std::string& test_name, int) {
    return profile_skip_reason(profile, test_name);
  };
  result.run = [profile, seed, mode, faults](int ranks_count, const rank_body_t& body) {
    sim::run_options_t options = sim::default_run_options(seed, mode);
    // With LCI_SIM_PROFILE set, default_run_options applied it already
    // (and only that profile's cases exist: sim_cases()).
    if (options.world.profile.kind != profile) sim::apply_provider_profile(&options.world, profile);
    if (faults) enable_survivable_faults(&options.world);
    meeting_t meeting;
    const sim::run_report_t report =
        sim::run_ranks(ranks_count, options, [&body, &meeting](sim::rank_env_t& env) {
          sim_network_rank_ctx_t ctx(env, meeting);
          body(ctx);
        });
    return report.ok ? std::string() : report.report;
  };
  result.can_crash = true;
  return result;
}

// Every profile, or only LCI_SIM_PROFILE's when it is set (a replay).
std::vector<sim::profile_kind_t> profiles_to_run() {
  const char* name = std::getenv("LCI_SIM_PROFILE");
  sim::profile_kind_t only = sim::profile_kind_t::default_profile;
  if (name != nullptr && *name != '\0' && sim::parse_profile_name(name, &only)) return {only};
  return {sim::profile_kind_t::default_profile, sim::profile_kind_t::shm, sim::profile_kind_t::tcp};
}

std::vector<backend_case_t> sim_cases() {
  std::vector<backend_case_t> cases;
  for (sim::profile_kind_t profile : profiles_to_run()) {
    // The providers' profiles: fewer seeds (CI time); LCI_SIM_SEED replays one.
    const bool full = profile == sim::profile_kind_t::default_profile;
    for (std::uint64_t seed : sim::seeds_from_env(1, full ? 4 : 2)) {
      cases.push_back(sim_case(profile, "deterministic_seed" + std::to_string(seed), seed,
                               sim::world_mode_t::deterministic, false));
    }
    for (std::uint64_t seed : sim::seeds_from_env(101, full ? 3 : 1)) {
      cases.push_back(sim_case(profile, "faults_seed" + std::to_string(seed), seed,
                               sim::world_mode_t::deterministic, true));
    }
    cases.push_back(sim_case(profile, "concurrent", 7, sim::world_mode_t::concurrent, false));
    cases.push_back(
        sim_case(profile, "concurrent_faults", 8, sim::world_mode_t::concurrent, true));
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Sim, BackendConformance, ::testing::ValuesIn(sim_cases()), case_name);

}  // namespace
}  // namespace lci::conformance
