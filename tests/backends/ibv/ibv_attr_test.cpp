// The ibv attributes (backend::net_device_attr_t::ibv; the runtime's
// ibv_gid_idx, ibv_force_gid_auto_select, ibv_odp_strategy,
// ibv_prefetch_strategy, ibv_td_strategy) on the emulated device: each
// has an effect the emulation can see, and a value the backend cannot
// honour is refused, naming the attribute, before any exchange.
//   GID     the index in the QPs' address vectors (the emulation's
//           sgid_indices), and traffic that only flows over the right
//           one: on the emulated RoCE fabric RoCE v1 GIDs do not cross
//           between HCAs.
//   ODP     IBV_ACCESS_ON_DEMAND on the MR (explicit), one implicit MR for
//           every registration (implicit), pinned where the HCA has no ODP.
//   prefetch an advise_mr of the advice the strategy names per
//           registration.
//   TD      thread domains: ibv_device_test's ThreadDomainStrategies; here
//           the invalid value.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ibv/ibv_context.hpp"
#include "backends/ibv/ibv_device.hpp"
#include "backends/ibv_emu/ibv_emu_fabric.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "tests/backends/ibv/ibv_device_test_util.hpp"

namespace lci::backend::ibv {
namespace {

using backend::net_device_attr_t;
using backend::net_ibv_odp_t;
using backend::net_ibv_prefetch_t;
using backend::net_ibv_td_t;
using ibv_emu::emu_fabric_t;
using ibv_emu::emu_options_t;
using ibv_emu::emu_stats_t;

// A RoCE fabric whose ports list two RoCE v1 GIDs, then two RoCE v2 ones.
emu_options_t roce_fabric() {
  emu_options_t emu;
  emu.ethernet = true;
  emu.gid_types = {IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2,
                   IBV_GID_TYPE_ROCE_V2};
  return emu;
}

// Each rank writes to its peer with immediate (a QP each way); false when
// the write failed (the peer unreachable over these addresses).
bool exchange_put_imm(sim::rank_env_t& env, backend::net_device_t& device) {
  std::vector<char> region(64, 0);
  net_mr_t mr;
  post_retrying(env, device, [&] { return device.register_memory(region.data(), 64, &mr); });
  const net_rmr_t mine = device.get_rmr(mr);
  net_rmr_t rmrs[2];
  env.allgather(&mine, sizeof(mine), rmrs);
  const int peer = 1 - env.rank();
  post_retrying(env, device, [&] {
    return device.post_putImm(peer, "gid", 4, net_mr_t{}, 0, rmrs[peer], 7, nullptr);
  });
  std::vector<net_status_t> statuses;
  bool wrote = false;
  bool written = false;
  bool failed = false;
  poll_until(env, device, &statuses, [&] {
    for (const net_status_t& status : statuses) {
      failed = failed || status.fault != net_fault_t::none;
      wrote = wrote || (status.opcode == net_opcode_t::write && status.fault == net_fault_t::none);
      written = written || status.opcode == net_opcode_t::remote_write;
    }
    statuses.clear();
    return failed || (wrote && written);
  }, "the writes");
  if (!failed) {
    EXPECT_STREQ(region.data(), "gid");
  }
  env.barrier();
  device.deregister_memory(&mr);
  return !failed;
}

// Both ranks' alloc_device refuses `ibv`, naming `expected`, before any
// exchange (a rank that went on to one would hang the run).
void expect_refused(const emu_options_t& emu, const backend::net_ibv_attr_t& ibv,
                    const std::string& expected) {
  run_two_ranks(
      sim::seed_from_env(62),
      [&](sim::rank_env_t&, ibv_context_t& context) {
        net_device_attr_t requested;
        requested.ibv = ibv;
        try {
          (void)context.alloc_device(requested);
          ADD_FAILURE() << "accepted; expected a refusal naming " << expected;
        } catch (const std::invalid_argument& error) {
          EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
        }
      },
      {}, emu);
}

// A fabric of two HCAs whose state the test reads after the run; run()
// gives each rank a device with `ibv`.
struct fabric_run_t {
  emu_fabric_t fabric;
  fabric_run_t(emu_options_t emu, std::uint64_t seed)
      : fabric([&] {
          emu.hcas_count = 2;
          emu.seed = seed;
          return emu;
        }()) {}
  void run(const backend::net_ibv_attr_t& ibv,
           const std::function<void(sim::rank_env_t&, ibv_device_t&)>& body) {
    (void)run_two_ranks_on(fabric, [&](sim::rank_env_t& env, ibv_context_t& context) {
      net_device_attr_t requested;
      requested.ibv = ibv;
      auto owned = context.alloc_device(requested);
      body(env, *static_cast<ibv_device_t*>(owned.get()));
    });
  }
};

// Two QPs to each of two ranks: 4 QPs per HCA.
constexpr std::size_t qps_per_hca = 4;

// Each rank's device under `ibv` addresses its QPs with GID `index` (-1:
// no GRH), and a write with immediate each way goes through, or (flows
// false) fails.
void expect_gid(const emu_options_t& emu, std::uint64_t seed, const backend::net_ibv_attr_t& ibv,
                int index, bool flows) {
  fabric_run_t run(emu, seed);
  run.run(ibv, [&](sim::rank_env_t& env, ibv_device_t& device) {
    EXPECT_EQ(device.gid_index(), index);
    const std::vector<int> expected = index < 0 ? std::vector<int>{}
                                                : std::vector<int>(qps_per_hca, index);
    EXPECT_EQ(run.fabric.sgid_indices(env.rank()), expected);
    EXPECT_EQ(exchange_put_imm(env, device), flows) << "over GID " << index;
  });
}

TEST(IbvGid, ASetIndexAddressesEveryQp) {
  backend::net_ibv_attr_t ibv;
  ibv.gid_index = 3;
  expect_gid(roce_fabric(), sim::seed_from_env(63), ibv, 3, true);
}

// On RoCE, -1 picks the first RoCE v2 GID (index 2 here): traffic flows.
// Index 0 (RoCE v1, which does not cross between HCAs) would not.
TEST(IbvGid, AutomaticOnEthernetPicksRoceV2) {
  expect_gid(roce_fabric(), sim::seed_from_env(64), {}, 2, true);
}

// The emulation's rule the two tests above rely on: a RoCE v1 GID, set on
// purpose, reaches no other HCA (the write fails: peer unreachable).
TEST(IbvGid, RoceV1DoesNotCrossBetweenHcas) {
  backend::net_ibv_attr_t ibv;
  ibv.gid_index = 1;
  expect_gid(roce_fabric(), sim::seed_from_env(65), ibv, 1, false);
}

// On InfiniBand QPs route by LID without a GRH; forced auto-selection
// addresses them through a GRH (GID 0, the only one), and traffic flows.
TEST(IbvGid, ForcedAutoSelectionOnInfinibandAddsAGrh) {
  expect_gid(emu_options_t{}, sim::seed_from_env(66), {}, -1, true);
  backend::net_ibv_attr_t ibv;
  ibv.force_gid_auto_select = true;
  expect_gid(emu_options_t{}, sim::seed_from_env(66), ibv, 0, true);
}

TEST(IbvGid, AnIndexBeyondTheTableIsRefused) {
  backend::net_ibv_attr_t ibv;
  ibv.gid_index = 4;
  expect_refused(roce_fabric(), ibv, "ibv_gid_idx = 4: the port's GID table has 4 entries");
  ibv.gid_index = -2;
  expect_refused(roce_fabric(), ibv, "ibv_gid_idx = -2");
}

// explicit_odp: every registration (the caller's and the device's own for
// an unregistered buffer) is on demand; traffic flows.
TEST(IbvOdp, ExplicitRegistersOnDemand) {
  emu_options_t emu;
  emu.odp = true;
  fabric_run_t run(emu, sim::seed_from_env(67));
  backend::net_ibv_attr_t ibv;
  ibv.odp = net_ibv_odp_t::explicit_odp;
  run.run(ibv, [&](sim::rank_env_t& env, ibv_device_t& device) {
    EXPECT_EQ(device.ibv_attr().odp, net_ibv_odp_t::explicit_odp);
    std::vector<char> buffer(256);
    net_mr_t mr;
    post_retrying(env, device, [&] { return device.register_memory(buffer.data(), 256, &mr); });
    const int access = run.fabric.access_of(static_cast<ibv_mr*>(mr.opaque));
    EXPECT_NE(access & IBV_ACCESS_ON_DEMAND, 0) << "access " << access;
    EXPECT_NE(access & IBV_ACCESS_REMOTE_WRITE, 0) << "access " << access;
    device.deregister_memory(&mr);
    EXPECT_TRUE(exchange_put_imm(env, device));
  });
  EXPECT_GE(run.fabric.stats().odp_registrations, 4u);
}

// An HCA without on-demand paging: pinned registrations (resolved none).
TEST(IbvOdp, WithoutTheCapabilityRegistrationsArePinned) {
  fabric_run_t run(emu_options_t{}, sim::seed_from_env(68));
  backend::net_ibv_attr_t ibv;
  ibv.odp = net_ibv_odp_t::explicit_odp;
  ibv.prefetch = net_ibv_prefetch_t::prefetch;
  run.run(ibv, [&](sim::rank_env_t& env, ibv_device_t& device) {
    EXPECT_EQ(device.ibv_attr().odp, net_ibv_odp_t::none);
    EXPECT_EQ(device.ibv_attr().prefetch, net_ibv_prefetch_t::none);
    EXPECT_TRUE(exchange_put_imm(env, device));
  });
  EXPECT_EQ(run.fabric.stats().odp_registrations, 0u);
  EXPECT_EQ(run.fabric.stats().prefetches, 0u);
}

// implicit_odp: one on-demand MR of the whole address space; every
// registration hands out its keys (no reg_mr per buffer, no limit).
TEST(IbvOdp, ImplicitUsesOneMrForEveryRegistration) {
  emu_options_t emu;
  emu.odp = true;
  emu.odp_implicit = true;
  fabric_run_t run(emu, sim::seed_from_env(69));
  backend::net_ibv_attr_t ibv;
  ibv.odp = net_ibv_odp_t::implicit_odp;
  run.run(ibv, [&](sim::rank_env_t& env, ibv_device_t& device) {
    EXPECT_EQ(device.ibv_attr().odp, net_ibv_odp_t::implicit_odp);
    EXPECT_EQ(device.attr().registrations_max, 0u);
    std::vector<char> first(64), second(64);
    net_mr_t first_mr, second_mr;
    post_retrying(env, device, [&] { return device.register_memory(first.data(), 64, &first_mr); });
    post_retrying(env, device,
                  [&] { return device.register_memory(second.data(), 64, &second_mr); });
    EXPECT_EQ(first_mr.opaque, second_mr.opaque);
    const int access = run.fabric.access_of(static_cast<ibv_mr*>(first_mr.opaque));
    EXPECT_NE(access & IBV_ACCESS_ON_DEMAND, 0) << "access " << access;
    EXPECT_EQ(device.get_rmr(first_mr).base, reinterpret_cast<std::uintptr_t>(first.data()));
    device.deregister_memory(&first_mr);
    device.deregister_memory(&second_mr);
    EXPECT_TRUE(exchange_put_imm(env, device));
  });
  EXPECT_EQ(run.fabric.stats().odp_registrations, 2u) << "one implicit MR per device";
}

// Each prefetch strategy advises each registration with its advice.
TEST(IbvPrefetch, EachStrategyAdvisesEveryRegistration) {
  struct expectation_t {
    net_ibv_prefetch_t prefetch;
    std::uint64_t emu_stats_t::*count;
  };
  for (const expectation_t expected :
       {expectation_t{net_ibv_prefetch_t::prefetch, &emu_stats_t::prefetches},
        expectation_t{net_ibv_prefetch_t::prefetch_write, &emu_stats_t::prefetches_write},
        expectation_t{net_ibv_prefetch_t::prefetch_no_fault, &emu_stats_t::prefetches_no_fault}}) {
    for (const net_ibv_odp_t odp : {net_ibv_odp_t::explicit_odp, net_ibv_odp_t::implicit_odp}) {
      emu_options_t emu;
      emu.odp = true;
      emu.odp_implicit = true;
      fabric_run_t run(emu, sim::seed_from_env(70));
      backend::net_ibv_attr_t ibv;
      ibv.odp = odp;
      ibv.prefetch = expected.prefetch;
      run.run(ibv, [&](sim::rank_env_t& env, ibv_device_t& device) {
        EXPECT_EQ(device.ibv_attr().prefetch, expected.prefetch);
        EXPECT_TRUE(exchange_put_imm(env, device));  // one registration per rank
      });
      const emu_stats_t stats = run.fabric.stats();
      EXPECT_EQ(stats.*expected.count, 2u) << "strategy " << static_cast<int>(expected.prefetch)
                                            << ", odp " << static_cast<int>(odp);
      EXPECT_EQ(stats.prefetches + stats.prefetches_write + stats.prefetches_no_fault, 2u);
    }
  }
}

TEST(IbvPrefetch, WithoutOnDemandPagingIsRefused) {
  backend::net_ibv_attr_t ibv;
  ibv.prefetch = net_ibv_prefetch_t::prefetch_write;
  expect_refused(emu_options_t{}, ibv, "ibv_prefetch_strategy: prefetches on-demand");
}

// Values outside their enums (a runtime built against another version).
TEST(IbvAttr, ValuesOutsideTheirEnumsAreRefused) {
  backend::net_ibv_attr_t ibv;
  ibv.odp = static_cast<net_ibv_odp_t>(3);
  expect_refused(emu_options_t{}, ibv, "ibv_odp_strategy = 3");
  ibv = {};
  ibv.odp = net_ibv_odp_t::explicit_odp;
  ibv.prefetch = static_cast<net_ibv_prefetch_t>(4);
  expect_refused(emu_options_t{}, ibv, "ibv_prefetch_strategy = 4");
  ibv = {};
  ibv.td = static_cast<net_ibv_td_t>(3);
  expect_refused(emu_options_t{}, ibv, "ibv_td_strategy = 3");
}

}  // namespace
}  // namespace lci::backend::ibv
