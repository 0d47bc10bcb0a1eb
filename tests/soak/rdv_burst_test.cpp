// rdv_burst (rdv_burst.hpp) on the simulator, over seeds, in deterministic
// and concurrent mode, with the default registration limit and the
// smallest one the protocol accepts; and, under a launcher
// (rdv_burst_test_ofi_* targets), as real processes over libfabric.
//
// Regressions: the first two cases deadlocked on the simulator while
// rendezvous sends registered their buffer at post time; ManyActiveMessages
// crashed over shm while remote writes' completions were taken by their
// context; the last two waited forever while rendezvous could move data
// only through a registration (below).
#include <gtest/gtest.h>

#include <cstddef>

#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_process.hpp"
#include "tests/soak/rdv_burst.hpp"

namespace {

using lci::soak::burst_target_t;
using lci::soak::rdv_burst_t;

// registration_size_max: the largest region the network registers (0: any).
lci::sim::sweep_t sweep_with_registrations(std::size_t registrations_max,
                                           std::size_t registration_size_max) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [registrations_max, registration_size_max](lci::sim::run_options_t& options) {
    options.world.registrations_max = registrations_max;
    options.world.registration_size_max = registration_size_max;
  };
  return sweep;
}

void expect_burst_ok(int ranks, const rdv_burst_t& burst, std::size_t registrations_max,
                     std::size_t registration_size_max = 0) {
  lci::sim::expect_runs_ok(ranks, sweep_with_registrations(registrations_max, registration_size_max),
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

// Where no registration can be had, the data is copied through packets
// (docs/design/protocol.md, "Registrations"). A program holding the device's
// whole standing share (12 of the simulator's 16: a quarter stays for
// writes; 1 of the smallest limit's 2) used to stall every rendezvous
// receive until it deregistered some: this deadlocked in every seed.
// Both phases, 16 messages each, to random ranks.
rdv_burst_t mixed_burst() {
  rdv_burst_t burst;
  burst.am_count = 16;
  burst.sendrecv_count = 16;
  burst.target = burst_target_t::random;
  return burst;
}

TEST(RdvBurst, ProgramHoldsEveryStandingRegistration) {
  LCI_SIM_ONLY("the simulator's registration limit");
  rdv_burst_t burst = mixed_burst();
  burst.held_registrations = 12;
  expect_burst_ok(3, burst, registrations_default);
  burst.held_registrations = 1;
  expect_burst_ok(3, burst, registrations_smallest);
}

// A network that registers nothing as large as the messages (as an HCA over
// its max_mr_size or the locked-memory limit): neither side can register,
// so every rendezvous copies. The receives' registration refused for good
// used to leave them waiting forever.
TEST(RdvBurst, NoRegistrationLargeEnough) {
  LCI_SIM_ONLY("the simulator's largest registration");
  expect_burst_ok(3, mixed_burst(), registrations_default, /*registration_size_max=*/4096);
}

}  // namespace
