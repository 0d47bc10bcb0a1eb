// free_device leaves nothing behind (docs/design/device.md, "Freeing a
// device"): no completion unpolled in the network, no operation in flight,
// no packet out of its pool. Each rank gives each of two threads a device;
// the threads send 64 KiB active messages (rendezvous) to ranks drawn from
// a PRNG every rank can replay, so each thread knows how many it receives
// and consumes every completion; then a barrier, and free_device on both
// devices. The harness's leftover check fails a run that leaves a
// completion in a freed device's queue (a rendezvous's last control
// message, whose send completion nothing waited for).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

constexpr int threads_count = 2;
constexpr int messages_per_thread = 20;
constexpr std::size_t message_size_bytes = 64 * 1024;

// The target of message `index` of (rank, thread): a splitmix64 step over
// the three, so that every rank computes every sender's targets.
int target_of(int rank, int thread, int index, int ranks_count) {
  std::uint64_t x = (static_cast<std::uint64_t>(rank) << 40) ^
                    (static_cast<std::uint64_t>(thread) << 20) ^ static_cast<std::uint64_t>(index);
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<int>(x % static_cast<std::uint64_t>(ranks_count));
}

// How many messages device `thread` of rank `me` receives.
int arrivals_for(int me, int thread, int ranks_count) {
  int count = 0;
  for (int rank = 0; rank < ranks_count; ++rank) {
    for (int index = 0; index < messages_per_thread; ++index) {
      if (target_of(rank, thread, index, ranks_count) == me) ++count;
    }
  }
  return count;
}

// One thread's traffic on its own device: every send and every arrival
// completes in `cq`, which the thread polls until it has seen them all.
void exchange(lci::device_t device, lci::comp_t cq, lci::rcomp_t rcomp, int thread) {
  const int me = lci::get_rank_me();
  const int ranks_count = lci::get_rank_n();
  std::vector<char> payload(message_size_bytes, static_cast<char>('a' + me));
  int sends_left = messages_per_thread;
  int arrivals_left = arrivals_for(me, thread, ranks_count);
  for (int index = 0; index < messages_per_thread; ++index) {
    const int target = target_of(me, thread, index, ranks_count);
    const lci::status_t status = post_retrying(
        [&] {
          return lci::post_am_x(target, payload.data(), payload.size(), cq, rcomp)
              .device(device)();
        },
        device);
    if (status.is_done()) --sends_left;
  }
  while (sends_left > 0 || arrivals_left > 0) {
    lci::status_t status = lci::cq_pop(cq);
    if (status.is_retry()) {
      (void)lci::progress_x().device(device)();
      continue;
    }
    require(status.is_done(), "a completion with an error");
    if (status.buffer == payload.data()) {
      --sends_left;
    } else {
      require(status.size == message_size_bytes, "an arrival of the wrong size");
      std::free(status.buffer);  // the default allocator is malloc
      --arrivals_left;
    }
  }
}

void device_per_thread_body(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  std::vector<lci::device_t> devices;
  std::vector<lci::comp_t> cqs;
  std::vector<lci::rcomp_t> rcomps;
  // Allocation pairs devices by order: one thread allocates them all.
  for (int thread = 0; thread < threads_count; ++thread) {
    devices.push_back(lci::alloc_device());
    cqs.push_back(lci::alloc_cq());
    rcomps.push_back(lci::register_rcomp(cqs.back()));
  }
  env.run_threads(threads_count, [&](int thread) {
    exchange(devices[static_cast<std::size_t>(thread)], cqs[static_cast<std::size_t>(thread)],
             rcomps[static_cast<std::size_t>(thread)], thread);
  });
  lci::barrier();
  for (lci::device_t& device : devices) lci::free_device(&device);
  for (lci::comp_t& cq : cqs) lci::free_comp(&cq);
  lci::g_runtime_fina();
}

TEST(DeviceTeardown, DevicePerThreadLeavesNothingInTheNetwork) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 16;
  lci::sim::expect_runs_ok(3, sweep, device_per_thread_body);
}

}  // namespace
