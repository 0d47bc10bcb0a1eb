// The backend conformance suite (tests/backends/conformance/) over the ibv
// backend (backends/ibv/ibv_device.hpp) on the emulated verbs device
// (backends/ibv_emu/ibv_emu_fabric.hpp): every rank of a simulated run opens
// its own HCA of one emulated fabric, seeded like the run; several seeds in
// deterministic mode (fibers), and the wire with delay spikes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/ibv/ibv_context.hpp"
#include "backends/ibv_emu/ibv_emu_fabric.hpp"
#include "sim/sim_faults.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "sim/sim_world.hpp"
#include "tests/backends/conformance/conformance.hpp"
#include "tests/backends/conformance/sim_rank_ctx.hpp"

namespace lci::conformance {
namespace {

using backend::ibv::ibv_bootstrap_t;
using backend::ibv::ibv_context_t;
using backend::ibv_emu::emu_fabric_t;
using backend::ibv_emu::emu_options_t;

// A rank: the ibv context over its HCA, bootstrapped through the harness's
// out-of-band allgather (a peer's QP in ERR is re-established only when
// this rank polls, which the barrier does). Its devices get the case's
// thread-domain strategy, as the runtime's ibv_td_strategy gives them.
class ibv_rank_ctx_t final : public sim_rank_ctx_t, private backend::net_context_t {
 public:
  ibv_rank_ctx_t(sim::rank_env_t& env, meeting_t& meeting, emu_fabric_t& fabric,
                 backend::net_ibv_td_t td)
      : sim_rank_ctx_t(env, meeting),
        context_(fabric.verbs(env.rank()), env.rank(), env.ranks_count(),
                 ibv_bootstrap_t{[&env](const void* mine, std::size_t bytes, void* all) {
                                   env.allgather(mine, bytes, all);
                                 },
                                 [&env](const char* what) { env.wait(what); }}),
        td_(td) {}
  backend::net_context_t& context() override { return *this; }

 private:
  int rank_me() const override { return context_.rank_me(); }
  int rank_n() const override { return context_.rank_n(); }
  bool reads_ibv_attr() const override { return true; }
  bool supports_put_imm() const override { return context_.supports_put_imm(); }
  std::unique_ptr<backend::net_device_t> alloc_device(
      const backend::net_device_attr_t& requested) override {
    backend::net_device_attr_t with_td = requested;
    with_td.ibv.td = td_;
    return context_.alloc_device(with_td);
  }

  ibv_context_t context_;
  const backend::net_ibv_td_t td_;
};

struct case_faults_t {
  double delay_spike_rate = 0.0;
  double reg_mr_failure_rate = 0.0;
  double send_queue_full_rate = 0.0;
  backend::net_ibv_td_t td_strategy = backend::net_ibv_td_t::none;
};

backend_case_t ibv_case(const std::string& name, std::uint64_t seed, sim::world_mode_t mode,
                        case_faults_t faults) {
  backend_case_t result;
  result.name = name;
  result.run = [seed, mode, faults](int ranks_count, const rank_body_t& body) {
    emu_options_t emu;
    emu.hcas_count = ranks_count;
    emu.seed = seed;
    // The simulator's fault switches (LCI_SIM_FAULT_<NAME>, applied by
    // default_run_options) reach the emulated wire too.
    sim::run_options_t options = sim::default_run_options(seed, mode);
    const sim::fault_options_t& world_faults = options.world.faults;
    emu.delay_spike_rate =
        std::max(faults.delay_spike_rate, world_faults.rate(sim::fault_kind_t::delay_spike));
    emu.reg_mr_failure_rate = std::max(
        faults.reg_mr_failure_rate, world_faults.rate(sim::fault_kind_t::registration_failure));
    emu.send_queue_full_rate = std::max(
        faults.send_queue_full_rate, world_faults.rate(sim::fault_kind_t::send_queue_full));
    // Ranks as OS threads: the emulated clock paced by every rank's polls
    // (a victim that polls re-establishes its QP before the requester's
    // timers run out; a crashed rank's CQs stop counting).
    if (mode == sim::world_mode_t::concurrent) emu.paced_polls_max = 10'000;
    // The watchdog hears of the wire's progress (the run's world is known
    // once a rank runs).
    std::atomic<sim::world_t*> world{nullptr};
    emu.on_progress = [&world] {
      // acquire: pairs with the release below; the world is built.
      if (sim::world_t* running = world.load(std::memory_order_acquire)) running->count_progress();
    };
    emu_fabric_t fabric(emu);
    meeting_t meeting;
    const sim::run_report_t report =
        sim::run_ranks(ranks_count, options, [&](sim::rank_env_t& env) {
          world.store(&env.world(), std::memory_order_release);
          ibv_rank_ctx_t ctx(env, meeting, fabric, faults.td_strategy);
          body(ctx);
        });
    world.store(nullptr, std::memory_order_relaxed);  // the run's world is gone
    if (report.ok) return std::string();
    return report.report + "\n" + fabric.describe();
  };
  result.can_crash = true;
  return result;
}

// Deterministic seeds; seeds with delay spikes, registrations that fail
// (retry_nomem, as a NIC out of memory-translation entries) and send queues
// found full (retry_nomem); concurrent
// mode (ranks and their threads are OS threads; run it under
// --config=tsan); and the thread-domain strategies.
std::vector<backend_case_t> ibv_cases() {
  const sim::world_mode_t deterministic = sim::world_mode_t::deterministic;
  std::vector<backend_case_t> cases;
  for (std::uint64_t seed : sim::seeds_from_env(1, 3)) {
    cases.push_back(ibv_case("emu_seed" + std::to_string(seed), seed, deterministic, {}));
  }
  for (std::uint64_t seed : sim::seeds_from_env(101, 2)) {
    cases.push_back(ibv_case("emu_faults_seed" + std::to_string(seed), seed, deterministic,
                             {0.1, 0.1, 0.1}));
  }
  cases.push_back(ibv_case("emu_concurrent", 7, sim::world_mode_t::concurrent, {}));
  // The thread-domain strategies: QPs on parent domains (one TD per QP, or
  // one per device).
  cases.push_back(ibv_case("emu_per_qp_td", 5, deterministic,
                           {0.0, 0.0, 0.0, backend::net_ibv_td_t::per_qp}));
  cases.push_back(ibv_case("emu_all_qp_td", 6, sim::world_mode_t::concurrent,
                           {0.0, 0.0, 0.0, backend::net_ibv_td_t::all_qp}));
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Ibv, BackendConformance, ::testing::ValuesIn(ibv_cases()), case_name);

}  // namespace
}  // namespace lci::conformance
