// Helpers of the tests that drive ibv devices (backends/ibv/ibv_device.hpp)
// directly on the emulated verbs device: two simulated ranks (fibers,
// seeded), each opening its own HCA of one emulated fabric.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ibv/ibv_context.hpp"
#include "backends/ibv_emu/ibv_emu_fabric.hpp"
#include "lci/util/error.hpp"
#include "sim/sim_harness.hpp"

namespace lci::backend::ibv {

using backend::net_fault_t;
using backend::net_mr_t;
using backend::net_opcode_t;
using backend::net_rmr_t;
using backend::net_status_t;

// The bootstrap of a simulated rank: the sim's allgather and wait.
inline ibv_bootstrap_t bootstrap_of(sim::rank_env_t& env) {
  return ibv_bootstrap_t{
      [&env](const void* mine, std::size_t bytes, void* all) { env.allgather(mine, bytes, all); },
      [&env](const char* what) { env.wait(what); }};
}

// Runs body(rank, env, context) on two ranks over `fabric` (two HCAs),
// seeded like the fabric; returns the run's trace: the scheduler's and the
// fabric's hashes mixed.
inline std::uint64_t run_two_ranks_on(
    ibv_emu::emu_fabric_t& fabric,
    const std::function<void(sim::rank_env_t&, ibv_context_t&)>& body,
    const ibv_context_options_t& context_options = {}) {
  const std::uint64_t seed = fabric.options().seed;
  const sim::run_report_t report = sim::run_ranks(
      2, sim::default_run_options(seed), [&](sim::rank_env_t& env) {
        ibv_context_t context(fabric.verbs(env.rank()), env.rank(), env.ranks_count(),
                              bootstrap_of(env), context_options);
        body(env, context);
      });
  EXPECT_TRUE(report.ok) << report.report << "\n" << fabric.describe();
  return report.trace_hash * 31 + fabric.trace_hash();
}

// The same over a fabric of its own, built from `emu`.
inline std::uint64_t run_two_ranks(std::uint64_t seed,
                                   const std::function<void(sim::rank_env_t&, ibv_context_t&)>& body,
                                   const ibv_context_options_t& context_options = {},
                                   ibv_emu::emu_options_t emu = {}) {
  emu.hcas_count = 2;
  emu.seed = seed;
  ibv_emu::emu_fabric_t fabric(emu);
  return run_two_ranks_on(fabric, body, context_options);
}

// Polls `device` until `done`, collecting every completion.
inline void poll_until(sim::rank_env_t& env, backend::net_device_t& device,
                std::vector<net_status_t>* statuses, const std::function<bool()>& done,
                const char* what) {
  for (int turn = 0; !done(); ++turn) {
    ASSERT_LT(turn, 1'000'000) << "waited too long for " << what;
    net_status_t batch[8];
    const std::size_t count = device.poll_comp(batch, 8);
    statuses->insert(statuses->end(), batch, batch + count);
    env.wait(what);
  }
}

template <typename Op>
void post_retrying(sim::rank_env_t& env, backend::net_device_t& device, Op&& op) {
  for (int tries = 0;; ++tries) {
    const error_t error = op();
    if (!error.is_retry()) {
      ASSERT_TRUE(error.is_done() || error.is_posted()) << error.get_str();
      return;
    }
    ASSERT_LT(tries, 100'000);
    net_status_t batch[8];
    (void)device.poll_comp(batch, 0);
    env.wait("post retry");
  }
}

}  // namespace lci::backend::ibv
