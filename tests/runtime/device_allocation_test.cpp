// Devices allocated by different threads of a rank, one after another
// (lci/runtime/runtime_impl.cpp, alloc_device): the rank's allocation flag
// refuses overlapping allocations and orders consecutive ones, so the second
// thread's allocation sees everything the first one's did (its device
// ordinal, which pairs devices across ranks) with no other synchronization
// between the threads. Under ThreadSanitizer a missing acquire or release on
// the flag is a data race on that state, which fails the test.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_profile.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

// This rank and `peer` send each other 64 bytes over `device`: it reaches
// the peer's device of the same allocation order, or the receive never
// completes.
void round_trip_on(lci::device_t device, int peer, lci::tag_t tag) {
  char out[64];
  char in[64] = {};
  std::memset(out, 'a' + lci::get_rank_me(), sizeof(out));
  lci::comp_t recv_sync = lci::alloc_sync();
  lci::comp_t send_sync = lci::alloc_sync();
  lci::status_t received = post_retrying(
      [&] { return lci::post_recv_x(peer, in, sizeof(in), tag, recv_sync).device(device)(); },
      device);
  lci::status_t sent = post_retrying(
      [&] { return lci::post_send_x(peer, out, sizeof(out), tag, send_sync).device(device)(); },
      device);
  while (sent.is_posted() && !lci::sync_test(send_sync, &sent)) {
    (void)lci::progress_x().device(device)();
  }
  while (received.is_posted() && !lci::sync_test(recv_sync, &received)) {
    (void)lci::progress_x().device(device)();
  }
  require(sent.is_done() && received.is_done() && received.rank == peer && received.tag == tag,
          "a round trip on an allocated device failed");
  for (char c : in) require(c == 'a' + peer, "a round trip carried the wrong bytes");
  lci::free_comp(&recv_sync);
  lci::free_comp(&send_sync);
}

// Both ranks allocate two devices, each by another thread: thread 0 first,
// then thread 1 once the flag `first_done` (relaxed on purpose: it carries
// no happens-before edge) says thread 0's allocation returned. The devices
// then pair by order across the ranks and carry a round trip each.
TEST(DeviceAllocation, ConsecutiveAllocationsOnTwoThreadsPairInOrder) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 0;  // OS threads only: fibers take turns, so nothing races
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(2, sweep, [](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    lci::device_t devices[2];
    std::atomic<bool> first_done{false};
    env.run_threads(2, [&](int thread) {
      if (thread == 1) {
        // relaxed: see the test's comment.
        while (!first_done.load(std::memory_order_relaxed)) std::this_thread::yield();
      }
      devices[thread] = lci::alloc_device();
      // relaxed: see the test's comment. Thread 0 makes no LCI call after
      // this until both have allocated.
      if (thread == 0) first_done.store(true, std::memory_order_relaxed);
    });
    const int peer = 1 - env.rank();
    for (lci::tag_t tag = 0; tag < 2; ++tag) round_trip_on(devices[tag], peer, tag);
    lci::barrier();
    for (lci::device_t& device : devices) lci::free_device(&device);
    lci::g_runtime_fina();
  });
}

// A program that allocates a device per phase and frees it after: each
// device pre-posts receives from one packet pool, and its closing network
// completes none of them. Those packets must come back to the pool when the
// device is freed. Kept out until the pool was freed, every phase lost the
// device's receives (under the shm profile's receive queue, the pool's
// whole receive share: 192 of the sim's 256 packets), and by the third
// phase the device could post no receive and its sends waited for a packet
// forever (a deadlock report).
TEST(DeviceAllocation, FreedDevicesGiveTheirPostedReceivesBack) {
  constexpr int phases = 8;
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.log = false;
    // (Unless LCI_SIM_PROFILE chose one: a profile applies once.)
    if (options.world.profile.is_default()) {
      lci::sim::apply_provider_profile(&options.world, lci::sim::profile_kind_t::shm);
    }
    options.world.devices_per_rank_max = phases + 1;  // freed devices keep their index
  };
  lci::sim::expect_runs_ok(2, sweep, [](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    const int peer = 1 - env.rank();
    lci::packet_pool_t pool = lci::alloc_packet_pool();
    for (lci::tag_t phase = 0; phase < phases; ++phase) {
      lci::device_t device = lci::alloc_device_x().packet_pool(pool)();
      round_trip_on(device, peer, phase);
      lci::barrier_x().device(device)();  // the peer is done with it too
      lci::free_device(&device);
    }
    lci::free_packet_pool(&pool);  // throws if a packet is still out
    lci::barrier();
    lci::g_runtime_fina();
  });
}

}  // namespace
