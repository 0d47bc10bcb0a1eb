// The LCI runtime over the ibv backend on the emulated verbs device: two
// simulated ranks whose runtimes get an ibv_context_t over their own HCA of
// one emulated fabric (sim::run_options_t::make_runtime_context), and
// exchange a send/recv of every protocol size (inject, buffer copy,
// rendezvous by write with immediate), and puts and gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "tests/backends/ibv/ibv_emu_runtime.hpp"

namespace {

void fill(std::vector<char>& buffer, int seed) {
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<char>(seed + i * 7);
}

void send_recv_every_size() {
  lci::g_runtime_init();
  const int me = lci::get_rank_me();
  const int peer = 1 - me;
  ASSERT_EQ(lci::get_rank_n(), 2);
  const std::size_t bcopy = lci::get_max_bcopy_size();
  lci::tag_t tag = 0;
  for (std::size_t size : {std::size_t{0}, std::size_t{8}, std::size_t{64}, std::size_t{65},
                           bcopy, bcopy + 1, std::size_t{65536}}) {
    ++tag;
    std::vector<char> out(size), in(size, 0);
    fill(out, me + static_cast<int>(size));
    lci::comp_t recv_sync = lci::alloc_sync();
    lci::comp_t send_sync = lci::alloc_sync();
    lci::status_t status;
    do {
      status = lci::post_recv(peer, in.data(), size, tag, recv_sync);
      lci::progress();
    } while (status.is_retry());
    const bool recv_done = status.is_done();
    do {
      status = lci::post_send(peer, out.data(), size, tag, send_sync);
      lci::progress();
    } while (status.is_retry());
    if (status.is_posted()) lci::sync_wait(send_sync, &status);
    if (!recv_done) lci::sync_wait(recv_sync, &status);
    std::vector<char> expected(size);
    fill(expected, peer + static_cast<int>(size));
    EXPECT_EQ(in, expected) << "size " << size;
    lci::free_comp(&recv_sync);
    lci::free_comp(&send_sync);
  }
  lci::barrier();
  lci::g_runtime_fina();
}

// Each rank puts `size` bytes into its peer's window and gets the peer's
// own bytes back from it (the window's other half).
void put_and_get(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  const int me = lci::get_rank_me();
  const int peer = 1 - me;
  for (std::size_t size : {std::size_t{8}, std::size_t{65536}}) {
    std::vector<char> window(2 * size, 0);
    std::vector<char> own(size);
    fill(own, 50 + me);
    std::copy(own.begin(), own.end(), window.begin() + static_cast<std::ptrdiff_t>(size));
    lci::mr_t mr = lci::register_memory(window.data(), window.size());
    const lci::rmr_t mine = lci::get_rmr(mr);
    lci::rmr_t rmrs[2];
    env.allgather(&mine, sizeof(mine), rmrs);
    std::vector<char> out(size), in(size, 0);
    fill(out, 10 + me);
    lci::comp_t sync = lci::alloc_sync();
    lci::status_t status;
    do {
      status = lci::post_put(peer, out.data(), size, sync, 0, rmrs[peer]);
      lci::progress();
    } while (status.is_retry());
    if (status.is_posted()) lci::sync_wait(sync, &status);
    do {
      status = lci::post_get(peer, in.data(), size, sync, size, rmrs[peer]);
      lci::progress();
    } while (status.is_retry());
    if (status.is_posted()) lci::sync_wait(sync, &status);
    std::vector<char> expected(size);
    fill(expected, 50 + peer);
    EXPECT_EQ(in, expected) << "get of " << size;
    lci::barrier();  // both puts have landed
    fill(expected, 10 + peer);
    EXPECT_TRUE(std::equal(expected.begin(), expected.end(), window.begin())) << "put of " << size;
    lci::barrier();
    lci::free_comp(&sync);
    lci::deregister_memory(&mr);
  }
  lci::g_runtime_fina();
}

TEST(IbvRuntime, PutAndGetTwoRanks) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(1, 3)) {
    lci::sim::run_options_t options = lci::sim::default_run_options(seed);
    const auto fabric = lci::ibv_test::use_emulated_ibv(&options, 2);
    const lci::sim::run_report_t report =
        lci::sim::run_ranks(2, options, put_and_get);
    EXPECT_TRUE(report.ok) << report.report << "\n" << fabric->describe();
    EXPECT_EQ(report.deliveries_count, 0u);
  }
}

TEST(IbvRuntime, SendRecvEverySizeTwoRanks) {
  for (std::uint64_t seed : lci::sim::seeds_from_env(1, 3)) {
    lci::sim::run_options_t options = lci::sim::default_run_options(seed);
    const auto fabric = lci::ibv_test::use_emulated_ibv(&options, 2);
    const lci::sim::run_report_t report =
        lci::sim::run_ranks(2, options, [](lci::sim::rank_env_t&) { send_recv_every_size(); });
    EXPECT_TRUE(report.ok) << report.report << "\n" << fabric->describe();
    // The runtime's traffic went over the emulated verbs device, none over
    // the simulated network.
    EXPECT_GT(fabric->stats().wrs_delivered, 14u);
    EXPECT_EQ(report.deliveries_count, 0u);
  }
}

// The ibv attributes reach the device through the runtime: a net context
// with a GID index, on-demand paging and prefetch, a device on it with
// per-QP thread domains; a message goes over that device.
TEST(IbvRuntime, IbvAttributesReachTheDevice) {
  const std::uint64_t seed = lci::sim::seed_from_env(4);
  lci::sim::run_options_t options = lci::sim::default_run_options(seed);
  lci::backend::ibv_emu::emu_options_t emu;
  emu.ethernet = true;
  emu.gid_types = {IBV_GID_TYPE_ROCE_V1, IBV_GID_TYPE_ROCE_V2, IBV_GID_TYPE_ROCE_V2};
  emu.odp = true;
  const auto fabric = lci::ibv_test::use_emulated_ibv(&options, 2, emu);
  std::vector<int> indices_before[2];  // the default device's QPs
  std::vector<int> indices_after[2];   // and the second device's
  std::uint64_t tds_before = 0;
  const lci::sim::run_report_t report = lci::sim::run_ranks(2, options, [&](lci::sim::rank_env_t&
                                                                                env) {
    lci::g_runtime_init();
    const int me = lci::get_rank_me();
    const int peer = 1 - me;
    indices_before[me] = fabric->sgid_indices(me);  // the default device's: automatic, 1
    if (me == 0) tds_before = fabric->stats().thread_domains;
    lci::barrier();  // neither rank allocates the second device before this
    lci::net_context_t context =
        lci::alloc_net_context_x()
            .ibv_gid_idx(2)
            .ibv_odp_strategy(lci::attr_ibv_odp_strategy_t::explicit_odp)
            .ibv_prefetch_strategy(lci::attr_ibv_prefetch_strategy_t::prefetch_write)();
    lci::device_t device =
        lci::alloc_device_x().net_context(context).ibv_td_strategy(
            lci::attr_ibv_td_strategy_t::per_qp)();
    indices_after[me] = fabric->sgid_indices(me);
    std::vector<char> buffer(64, static_cast<char>(me));
    lci::mr_t mr = lci::register_memory_x(buffer.data(), buffer.size()).device(device)();
    lci::comp_t sync = lci::alloc_sync();
    lci::status_t status;
    do {
      status = lci::post_recv_x(peer, buffer.data(), 8, 1, sync).device(device)();
      lci::progress_x().device(device)();
    } while (status.is_retry());
    const bool received = status.is_done();
    char out[8] = "attrs";
    lci::comp_t send_sync = lci::alloc_sync();
    do {
      status = lci::post_send_x(peer, out, 8, 1, send_sync).device(device)();
      lci::progress_x().device(device)();
    } while (status.is_retry());
    if (status.is_posted()) lci::sync_wait_x(send_sync, &status).device(device)();
    if (!received) lci::sync_wait_x(sync, &status).device(device)();
    lci::free_comp(&send_sync);
    EXPECT_STREQ(buffer.data(), "attrs");
    lci::barrier();
    lci::free_comp(&sync);
    lci::deregister_memory(&mr);
    lci::free_device(&device);
    lci::free_net_context(&context);
    lci::g_runtime_fina();
  });
  EXPECT_TRUE(report.ok) << report.report << "\n" << fabric->describe();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(indices_before[rank], std::vector<int>(4, 1)) << "the default device: automatic";
    std::vector<int> both(4, 1);
    both.insert(both.end(), 4, 2);  // QP numbers grow: the second device's come last
    EXPECT_EQ(indices_after[rank], both) << "the second device: ibv_gid_idx 2";
  }
  // The second device's thread domains: one per QP.
  EXPECT_EQ(fabric->stats().thread_domains - tds_before, 8u);
  const lci::backend::ibv_emu::emu_stats_t stats = fabric->stats();
  EXPECT_GE(stats.odp_registrations, 2u);
  EXPECT_EQ(stats.prefetches_write, 2u) << "one per register_memory";
}

}  // namespace
