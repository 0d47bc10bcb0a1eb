// The soak workload (tests/soak/soak_workload.hpp) over the ibv backend on
// the emulated verbs device (ibv_emu_runtime.hpp): every rank's runtime on
// its own HCA of one emulated fabric seeded like the run; a shared device
// and a device per thread, several epochs, the exhaustion mode, and the
// emulated wire's faults that have a verbs meaning:
//   delay_spike           a WR's delivery held back (emu delay_spike_rate)
//   registration_failure  reg_mr ENOMEM: register_memory is retry_nomem
//   send_queue_full       post_send ENOMEM: the post is retry_nomem
// The simulator's other kinds need no injection over verbs or have none:
// a receive missing (no_recv_buffer) is a receiver-not-ready NAK the
// emulation raises whenever an SRQ runs dry; reordering across QPs
// (reorder) is the wire's jitter; the CQ cannot overrun (the device sizes
// it for every op: cq_pressure); a busy lock (lock_busy) is the device's
// own try-locks (ibv_lock_test); a rank crash (rank_crash) is left to the
// conformance suite's DeadPeer cases.
// Each run checks every message (soak_checker.hpp); a failure names its
// seed and replay line (LCI_SIM_SEED=<seed>).
//
// AddressSanitizer: fewer seeds. ThreadSanitizer: deterministic runs are
// one OS thread (nothing to find): only the concurrent case runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/ibv_emu/ibv_emu_fabric.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "tests/backends/ibv/ibv_emu_runtime.hpp"
#include "tests/soak/soak_options.hpp"
#include "tests/soak/soak_workload.hpp"

namespace {

using lci::backend::ibv_emu::emu_options_t;
using lci::backend::ibv_emu::emu_stats_t;
using lci::soak::device_mode_t;
using lci::soak::soak_options_t;

#if defined(__SANITIZE_THREAD__)
#define IBV_SOAK_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define IBV_SOAK_TSAN 1
#endif
#endif

#ifdef IBV_SOAK_SANITIZED
constexpr std::size_t seeds_per_case = 1;
constexpr int ops_per_thread = 80;
constexpr std::size_t size_max = 256 << 10;
#else
constexpr std::size_t seeds_per_case = 5;
constexpr int ops_per_thread = 300;
constexpr std::size_t size_max = std::size_t{1} << 20;
#endif

#ifdef IBV_SOAK_TSAN
#define IBV_SOAK_DETERMINISTIC_ONLY() \
  GTEST_SKIP() << "deterministic mode: one OS thread, nothing for ThreadSanitizer"
#else
#define IBV_SOAK_DETERMINISTIC_ONLY() (void)0
#endif

soak_options_t base_options(int threads, device_mode_t devices) {
  return lci::soak::test_soak_options(threads, devices, ops_per_thread, size_max);
}

// Runs `options` on `ranks` ranks over the emulated fabric for each seed
// (LCI_SIM_SEED: that one only); returns the fabrics' statistics summed.
emu_stats_t run_soak(int ranks, const soak_options_t& options, lci::sim::world_mode_t mode,
                     std::uint64_t seed_first, std::size_t seeds_count,
                     const std::function<void(emu_options_t&)>& configure = {}) {
  emu_stats_t total;
  for (std::uint64_t seed : lci::sim::seeds_from_env(seed_first, seeds_count)) {
    lci::sim::run_options_t run = lci::sim::default_run_options(seed, mode);
    run.log = false;  // a failure's report names the seed and the replay line
    emu_options_t emu;
    emu.max_srq = 64;  // a device per thread: two SRQs each
    if (configure) configure(emu);
    const auto fabric = lci::ibv_test::use_emulated_ibv(&run, ranks, emu);
    soak_options_t mine = options;
    mine.seed = seed;
    const lci::sim::run_report_t report =
        lci::sim::run_ranks(ranks, run, [mine](lci::sim::rank_env_t&) {
          (void)lci::soak::run_soak_rank(mine);
        });
    EXPECT_TRUE(report.ok) << lci::soak::describe(mine) << "\n"
                           << report.report << "\n"
                           << fabric->describe();
    EXPECT_EQ(report.deliveries_count, 0u) << "traffic over the simulated network, not ibv";
    const emu_stats_t stats = fabric->stats();
    EXPECT_GT(stats.wrs_delivered, 0u);
    total.wrs_delivered += stats.wrs_delivered;
    total.delay_spikes += stats.delay_spikes;
    total.reg_mr_failures += stats.reg_mr_failures;
    total.send_queue_full_faults += stats.send_queue_full_faults;
    total.rnr_naks += stats.rnr_naks;
  }
  return total;
}

TEST(IbvSoak, SharedDevice) {
  IBV_SOAK_DETERMINISTIC_ONLY();
  run_soak(3, base_options(2, device_mode_t::shared), lci::sim::world_mode_t::deterministic, 1,
           seeds_per_case);
}

TEST(IbvSoak, DevicePerThread) {
  IBV_SOAK_DETERMINISTIC_ONLY();
  run_soak(3, base_options(3, device_mode_t::per_thread), lci::sim::world_mode_t::deterministic,
           11, seeds_per_case);
}

TEST(IbvSoak, ManyEpochsSmallSizes) {
  IBV_SOAK_DETERMINISTIC_ONLY();
  soak_options_t options = base_options(2, device_mode_t::shared);
  options.size_max = 4000;
  options.epochs = 3;
  run_soak(2, options, lci::sim::world_mode_t::deterministic, 21, seeds_per_case);
}

// Tiny packet pool, CQs and device queues (the device's send queue and
// receives at a few entries).
TEST(IbvSoak, Exhaust) {
  IBV_SOAK_DETERMINISTIC_ONLY();
  soak_options_t options = base_options(2, device_mode_t::shared);
  options.exhaust = true;
  run_soak(3, options, lci::sim::world_mode_t::deterministic, 41, seeds_per_case);
  options.devices = device_mode_t::per_thread;
  run_soak(2, options, lci::sim::world_mode_t::deterministic, 51, seeds_per_case);
}

// Ranks and their threads as OS threads (for --config=tsan): the device's
// try-locks under real contention.
TEST(IbvSoak, Concurrent) {
  run_soak(2, base_options(3, device_mode_t::shared), lci::sim::world_mode_t::concurrent, 31, 1);
  run_soak(3, base_options(2, device_mode_t::per_thread), lci::sim::world_mode_t::concurrent, 32,
           1);
}

struct fault_case_t {
  const char* name;
  std::function<void(emu_options_t&)> configure;
  std::uint64_t emu_stats_t::*fired;
};

class IbvSoakFault : public ::testing::TestWithParam<fault_case_t> {};

TEST_P(IbvSoakFault, EveryMessageExactlyOnce) {
  IBV_SOAK_DETERMINISTIC_ONLY();
  const fault_case_t& fault = GetParam();
  const emu_stats_t stats =
      run_soak(3, base_options(2, device_mode_t::shared), lci::sim::world_mode_t::deterministic,
               101, seeds_per_case, fault.configure);
  EXPECT_GT(stats.*fault.fired, 0u) << "the fault never fired";
}

INSTANTIATE_TEST_SUITE_P(
    Faults, IbvSoakFault,
    ::testing::Values(
        fault_case_t{"delay_spike", [](emu_options_t& emu) { emu.delay_spike_rate = 0.05; },
                     &emu_stats_t::delay_spikes},
        fault_case_t{"registration_failure",
                     [](emu_options_t& emu) { emu.reg_mr_failure_rate = 0.2; },
                     &emu_stats_t::reg_mr_failures},
        fault_case_t{"send_queue_full",
                     [](emu_options_t& emu) { emu.send_queue_full_rate = 0.2; },
                     &emu_stats_t::send_queue_full_faults}),
    [](const ::testing::TestParamInfo<fault_case_t>& info) { return std::string(info.param.name); });

}  // namespace
