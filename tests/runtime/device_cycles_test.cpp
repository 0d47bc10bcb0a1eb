// Devices allocated and freed over and over under one runtime, while
// traffic flows on another device of it: every cycle gives back what the
// device took (its posted receives' packets, its sends' packets, its pools
// of records), so the packet pool the cycled devices use is full again at
// the end, the runtime keeps no more device pools than at the start, and
// nothing hangs (repeated alloc_device/free_device that leaked posted receives
// starved the pool within a few cycles). Simulated ranks, and real
// processes through the harness's process mode (BUILD).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "lci.hpp"
#include "lci/runtime/resources.hpp"
#include "lci/runtime/runtime_impl.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;
using lci::runtime_test::round_trip;

// Cycles of a run: 1000, or LCI_TEST_DEVICE_CYCLES (BUILD: fewer over a
// real network, where each allocation exchanges addresses through the
// launcher; a manual target runs 1000 there).
int cycles_count() {
  const char* value = std::getenv("LCI_TEST_DEVICE_CYCLES");
  return value != nullptr ? std::atoi(value) : 1000;
}
// Every this many cycles the cycled device carries a round trip, of
// messages too large to inject: each is sent from a packet, which its
// send's completion gives back (memory semantic: after the send is done).
constexpr int cycles_per_round_trip = 10;
constexpr std::size_t round_trip_bytes = 1024;
constexpr std::size_t cycled_pool_packets = 256;
constexpr lci::tag_t traffic_tag = 7;
constexpr lci::tag_t cycled_tag = 8;

// One exchange of the traffic: rank 0 sends whether its cycles are done,
// rank 1 answers with whether its own are; both stop after the exchange in
// which both said so, so they stop at the same one.
bool exchange_says_stop(int peer, bool my_cycles_done) {
  const int me = lci::get_rank_me();
  std::uint64_t out = my_cycles_done ? 1 : 0;
  std::uint64_t in = 0;
  lci::comp_t sync = lci::alloc_sync();
  auto send = [&] { return lci::post_send(peer, &out, sizeof(out), traffic_tag, sync); };
  auto recv = [&] { return lci::post_recv(peer, &in, sizeof(in), traffic_tag, sync); };
  if (me == 0) {
    if (post_retrying(send).is_posted()) lci::sync_wait(sync, nullptr);
    if (post_retrying(recv).is_posted()) lci::sync_wait(sync, nullptr);
  } else {
    if (post_retrying(recv).is_posted()) lci::sync_wait(sync, nullptr);
    out = (my_cycles_done && in == 1) ? 1 : 0;
    if (post_retrying(send).is_posted()) lci::sync_wait(sync, nullptr);
  }
  lci::free_comp(&sync);
  return my_cycles_done && in == 1 && out == 1;
}

void cycles_body(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  const int peer = 1 - lci::get_rank_me();
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(cycled_pool_packets)();
  const lci::packet_pool::pool_t& packets = pool.p_impl->pool;
  const std::size_t packets_at_start = packets.packets_free_count();
  lci::detail::runtime_impl_t& runtime = *lci::get_g_runtime().p_impl;
  const std::size_t device_pools_at_start = runtime.device_pools_count();
  std::atomic<bool> cycles_done{false};
  env.run_threads(2, [&](int thread) {
    if (thread == 0) {
      bool stop = false;
      // acquire: pairs with the release below.
      while (!stop) stop = exchange_says_stop(peer, cycles_done.load(std::memory_order_acquire));
      return;
    }
    const int cycles = cycles_count();
    for (int cycle = 0; cycle < cycles; ++cycle) {
      lci::device_t device = lci::alloc_device_x().packet_pool(pool)();
      if (cycle % cycles_per_round_trip == 0) round_trip(peer, cycled_tag, device, round_trip_bytes);
      lci::free_device(&device);
    }
    // release: pairs with the traffic thread's acquire.
    cycles_done.store(true, std::memory_order_release);
  });
  require(packets.packets_free_count() == packets_at_start,
          "the cycled devices' pool has " + std::to_string(packets.packets_free_count()) +
              " packets free at the end, " + std::to_string(packets_at_start) + " at the start");
  require(runtime.device_pools_count() == device_pools_at_start,
          "the runtime keeps the pools of " + std::to_string(runtime.device_pools_count()) +
              " devices at the end, of " + std::to_string(device_pools_at_start) +
              " at the start");
  lci::free_packet_pool(&pool);
  lci::g_runtime_fina();
}

TEST(DeviceCycles, AllocAndFreeWhileTrafficFlowsLeaksNothing) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [](lci::sim::run_options_t& options) {
    // The default device, then one device per cycle: the simulator
    // numbers devices by allocation and reuses no index.
    options.world.devices_per_rank_max = static_cast<std::size_t>(cycles_count()) + 1;
  };
  lci::sim::expect_runs_ok(2, sweep, cycles_body);
}

}  // namespace
