// The backend conformance suite against the simulated network: several seeds
// in deterministic mode, the same with every survivable fault on, and
// concurrent mode (real threads; run it under --config=tsan); under each
// provider profile (sim/sim_profile.hpp: default, shm, tcp), the profiles
// of real providers with fewer seeds. Case names start with the profile.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_profile.hpp"
#include "sim/sim_seed.hpp"
#include "sim/sim_world.hpp"
#include "tests/backends/conformance/conformance.hpp"

namespace lci::conformance {
namespace {

// The ranks' meeting point of one run: a barrier that keeps polling. With
// manual progress (rma_waits_for_target, and every provider profile: an
// RMA lands, a connection is accepted, only while the target calls its
// device) a rank waiting in a barrier must keep polling its endpoints, as
// the ofi harness does (tests/backends/ofi/ofi_conformance.cpp): a peer's
// put may still wait for it. The mutex is never held across a backend call
// or a wait (a fiber may switch there).
struct meeting_t {
  std::mutex lock;
  std::uint64_t generation = 0;
  int arrived = 0;
};

class sim_rank_ctx_t final : public rank_ctx_t {
 public:
  sim_rank_ctx_t(sim::rank_env_t& env, meeting_t& meeting) : env_(env), meeting_(meeting) {}
  backend::net_context_t& context() override { return env_.context(); }
  void wait(const char* what) override { env_.wait(what); }
  // All live ranks meet; this one polls its endpoints while it waits.
  void barrier() override {
    std::uint64_t generation;
    {
      std::lock_guard<std::mutex> guard(meeting_.lock);
      generation = meeting_.generation;
      ++meeting_.arrived;
    }
    for (;;) {
      {
        std::lock_guard<std::mutex> guard(meeting_.lock);
        if (meeting_.generation != generation) return;
        if (meeting_.arrived >= live_ranks()) {  // the last one (or a rank crashed)
          meeting_.arrived = 0;
          ++meeting_.generation;
          return;
        }
      }
      poll_endpoints();
      env_.wait("barrier");
    }
  }
  // The exchange itself blocks; the polling barrier first means no peer
  // still waits for this rank's progress then.
  void allgather(const void* mine, std::size_t bytes, void* all) override {
    barrier();
    env_.allgather(mine, bytes, all);
  }
  void run_threads(int threads_count, const std::function<void(int)>& body) override {
    env_.run_threads(threads_count, body);
  }
  [[noreturn]] void crash() override { env_.crash(); }
  void add_poller(const void* owner, std::function<void()> poll) override {
    std::lock_guard<std::mutex> guard(pollers_lock_);
    pollers_.emplace_back(owner, std::move(poll));
  }
  void remove_poller(const void* owner) override {
    std::lock_guard<std::mutex> guard(pollers_lock_);
    pollers_.erase(std::remove_if(pollers_.begin(), pollers_.end(),
                                  [owner](const auto& entry) { return entry.first == owner; }),
                   pollers_.end());
  }

 private:
  int live_ranks() {
    int live = 0;
    for (int rank = 0; rank < env_.ranks_count(); ++rank) live += env_.world().is_crashed(rank) ? 0 : 1;
    return live;
  }
  void poll_endpoints() {
    std::vector<std::function<void()>> polls;
    {
      std::lock_guard<std::mutex> guard(pollers_lock_);
      for (const auto& entry : pollers_) polls.push_back(entry.second);
    }
    for (const auto& poll : polls) poll();
  }

  sim::rank_env_t& env_;
  meeting_t& meeting_;
  std::mutex pollers_lock_;
  std::vector<std::pair<const void*, std::function<void()>>> pollers_;
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
          sim_rank_ctx_t ctx(env, meeting);
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
