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
#include "tests/ibv/ibv_emu_runtime.hpp"

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

}  // namespace
