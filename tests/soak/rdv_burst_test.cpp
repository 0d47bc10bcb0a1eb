// rdv_burst (rdv_burst.hpp) on the simulator, over seeds, in deterministic
// and concurrent mode, with the default registration limit and the
// smallest one the protocol accepts; and, under a launcher
// (rdv_burst_test_ofi_* targets), as real processes over libfabric.
//
// Regressions: each case deadlocked on the simulator while rendezvous
// sends registered their buffer at post time; ManyActiveMessages crashed
// over shm while remote writes' completions were taken by their context.
#include <gtest/gtest.h>

#include <cstddef>

#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_process.hpp"
#include "tests/soak/rdv_burst.hpp"

namespace {

using lci::soak::burst_target_t;
using lci::soak::rdv_burst_t;

lci::sim::sweep_t sweep_with_registrations(std::size_t registrations_max) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [registrations_max](lci::sim::run_options_t& options) {
    options.world.registrations_max = registrations_max;
  };
  return sweep;
}

void expect_burst_ok(int ranks, const rdv_burst_t& burst, std::size_t registrations_max) {
  lci::sim::expect_runs_ok(ranks, sweep_with_registrations(registrations_max),
                           [&burst](lci::sim::rank_env_t&) { lci::soak::run_rdv_burst(burst); });
}

// The sim's default (16) and the smallest a device accepts (2: one for a
// rendezvous receive, one kept for sends).
constexpr std::size_t registrations_default = 16;
constexpr std::size_t registrations_smallest = 2;

TEST(RdvBurst, ActiveMessagesToRandomRanks) {
  rdv_burst_t burst;
  burst.am_count = 24;
  burst.target = burst_target_t::random;
  for (std::size_t registrations : {registrations_default, registrations_smallest}) {
    expect_burst_ok(3, burst, registrations);
  }
}

TEST(RdvBurst, SendRecvShuffled) {
  rdv_burst_t burst;
  burst.am_count = 0;
  burst.sendrecv_count = 24;
  for (std::size_t registrations : {registrations_default, registrations_smallest}) {
    expect_burst_ok(2, burst, registrations);
  }
}

// Over shm, 200 and more failed every time; on the simulator a smaller
// count keeps the run short.
TEST(RdvBurst, ManyActiveMessages) {
  rdv_burst_t burst;
  burst.am_count = lci::sim::process_mode() ? 600 : 64;
  burst.target = burst_target_t::next;
  expect_burst_ok(2, burst, registrations_default);
}

}  // namespace
