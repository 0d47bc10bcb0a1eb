// world_options_t::rma_waits_for_target: with it, a put reaches the target's
// memory (and completes at the initiator) only inside a call of the target's
// device, as over libfabric's manual-progress providers; without it, on
// arrival. The same exchange runs both ways and must tell them apart.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "sim/sim_world.hpp"
#include "tests/sim/sim_network_workload.hpp"

namespace {

using lci::backend::net_mr_t;
using lci::backend::net_rmr_t;
using lci::backend::net_status_t;
using lci::sim::rank_env_t;
using lci::sim::run_options_t;
using lci::sim::run_report_t;
using lci::sim::testing::require;

constexpr std::uint64_t pattern = 0x5eed5eed5eed5eedull;
// Polls the initiator makes after its put left the wire, while the target
// makes no device call.
constexpr int idle_polls_count = 20;

struct observed_t {
  bool completed_before_target_called = false;
  bool landed_before_target_called = false;
  bool landed_after_target_called = false;
};

// Rank 0 puts 8 bytes into rank 1's registered buffer. Rank 1 sits in an
// out-of-band barrier (no device call) until rank 0 has polled
// idle_polls_count times after the put left the wire; then it looks at its
// buffer, calls poll_comp once, and looks again.
observed_t run_put(std::uint64_t seed, bool rma_waits_for_target) {
  run_options_t options = lci::sim::default_run_options(seed);
  options.log = false;
  options.world.rma_waits_for_target = rma_waits_for_target;
  auto observed = std::make_unique<observed_t>();
  const run_report_t report = lci::sim::run_ranks(2, options, [&](rank_env_t& env) {
    auto device = env.context().alloc_device({});
    std::uint64_t target_word = 0;
    net_mr_t mr;
    net_rmr_t rmrs[2];
    net_rmr_t mine;
    if (env.rank() == 1) {
      require(device->register_memory(&target_word, sizeof(target_word), &mr).is_done(),
              "register");
      mine = device->get_rmr(mr);
    }
    env.allgather(&mine, sizeof(mine), rmrs);
    net_status_t status;
    if (env.rank() == 0) {
      const std::uint64_t source_word = pattern;
      require(device->post_put(1, &source_word, sizeof(source_word), {}, 0, rmrs[1], nullptr)
                  .is_posted(),
              "post_put");
      while (env.world().wire_count() > 0) env.wait("the put on the wire");
      for (int i = 0; i < idle_polls_count; ++i) {
        if (device->poll_comp(&status, 1) == 1) observed->completed_before_target_called = true;
        env.wait("polls while the target makes no call");
      }
      env.barrier();  // [A] rank 1 looks, then calls its device
      env.barrier();  // [B]
      while (!observed->completed_before_target_called && device->poll_comp(&status, 1) == 0) {
        env.wait("the put's completion");
      }
    } else {
      env.barrier();  // [A]
      observed->landed_before_target_called = target_word == pattern;
      (void)device->poll_comp(&status, 1);
      observed->landed_after_target_called = target_word == pattern;
      env.barrier();  // [B]
      device->deregister_memory(&mr);
    }
    env.barrier();
  });
  EXPECT_TRUE(report.ok) << report.report;
  return *observed;
}

TEST(SimNetworkManualProgress, APutWaitsForTheTargetsNextDeviceCall) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(90, 4)) {
    const observed_t observed = run_put(seed, /*rma_waits_for_target=*/true);
    EXPECT_FALSE(observed.completed_before_target_called) << "seed " << seed;
    EXPECT_FALSE(observed.landed_before_target_called) << "seed " << seed;
    EXPECT_TRUE(observed.landed_after_target_called) << "seed " << seed;
  }
}

TEST(SimNetworkManualProgress, WithoutTheOptionAPutLandsOnArrival) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(90, 4)) {
    const observed_t observed = run_put(seed, /*rma_waits_for_target=*/false);
    EXPECT_TRUE(observed.completed_before_target_called) << "seed " << seed;
    EXPECT_TRUE(observed.landed_before_target_called) << "seed " << seed;
    EXPECT_TRUE(observed.landed_after_target_called) << "seed " << seed;
  }
}

}  // namespace
