// The backend conformance suite against the simulated network: several seeds
// in deterministic mode, the same with every survivable fault on, and
// concurrent mode (real threads; run it under --config=tsan).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "tests/backends/conformance/conformance.hpp"

namespace lci::conformance {
namespace {

class sim_rank_ctx_t final : public rank_ctx_t {
 public:
  explicit sim_rank_ctx_t(sim::rank_env_t& env) : env_(env) {}
  backend::net_context_t& context() override { return env_.context(); }
  void wait(const char* what) override { env_.wait(what); }
  void barrier() override { env_.barrier(); }
  void allgather(const void* mine, std::size_t bytes, void* all) override {
    env_.allgather(mine, bytes, all);
  }
  void run_threads(int threads_count, const std::function<void(int)>& body) override {
    env_.run_threads(threads_count, body);
  }
  [[noreturn]] void crash() override { env_.crash(); }

 private:
  sim::rank_env_t& env_;
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

backend_case_t sim_case(std::string name, std::uint64_t seed, sim::world_mode_t mode,
                        bool faults) {
  backend_case_t result;
  result.name = std::move(name);
  result.run = [seed, mode, faults](int ranks_count, const rank_body_t& body) {
    sim::run_options_t options = sim::default_run_options(seed, mode);
    if (faults) enable_survivable_faults(&options.world);
    const sim::run_report_t report =
        sim::run_ranks(ranks_count, options, [&body](sim::rank_env_t& env) {
          sim_rank_ctx_t ctx(env);
          body(ctx);
        });
    return report.ok ? std::string() : report.report;
  };
  result.can_crash = true;
  return result;
}

std::vector<backend_case_t> sim_cases() {
  std::vector<backend_case_t> cases;
  for (std::uint64_t seed : sim::seeds_from_env(1, 4)) {
    cases.push_back(sim_case("deterministic_seed" + std::to_string(seed), seed,
                             sim::world_mode_t::deterministic, false));
  }
  for (std::uint64_t seed : sim::seeds_from_env(101, 3)) {
    cases.push_back(sim_case("faults_seed" + std::to_string(seed), seed,
                             sim::world_mode_t::deterministic, true));
  }
  cases.push_back(sim_case("concurrent", 7, sim::world_mode_t::concurrent, false));
  cases.push_back(sim_case("concurrent_faults", 8, sim::world_mode_t::concurrent, true));
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Sim, BackendConformance, ::testing::ValuesIn(sim_cases()), case_name);

}  // namespace
}  // namespace lci::conformance
