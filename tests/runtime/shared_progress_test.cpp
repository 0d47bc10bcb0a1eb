// Two threads of a rank progressing one device: the parts of one message
// handled on either thread, and the thread that completes the message
// seeing what the other thread did with the parts before it.
//
// The simulator preempts threads around their network calls (fault
// `preempt`), so that the parts of a message spread over both threads: in
// one run of the rendezvous test below, 30 of its 300 two-chunk receives had
// their chunks copied by different threads (counted by hand with a print in
// handle_rdv_chunk, 2026-11-28).
//
// Under ThreadSanitizer this does not catch a weakened chunk counter
// (lci/protocol/rendezvous.cpp, `copied`): none of the three weakenings was
// reported in 300 receives, so another edge orders the threads there (a
// lock or read-modify-write both threads take between one's copy and the
// other's completion, not found). The counter's orders are checked by
// //tests/runtime:runtime_litmus_test instead.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

lci::sim::sweep_t two_threads_preempted(const std::function<void(lci::sim::run_options_t&)>& more) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 0;  // OS threads only: fibers take turns, so nothing races
  sweep.configure = [more](lci::sim::run_options_t& options) {
    options.log = false;
    options.world.faults.rate(lci::sim::fault_kind_t::preempt) = 0.3;
    options.world.faults.preempt_micros = 100;
    more(options);
  };
  return sweep;
}

char byte_of(int round, std::size_t at) { return static_cast<char>('a' + (round * 7 + at) % 26); }

// Rendezvous receives that the network cannot register (the simulator
// registers at most 4 KiB here) arrive copied, a packet each
// (lci/protocol/rendezvous.cpp, handle_rdv_chunk): the chunks of one receive
// are copied by either thread, and the chunk that makes the count whole
// completes the receive with every byte in place.
TEST(SharedProgress, RendezvousChunksCopiedOnEitherThreadCompleteTheReceiveWhole) {
  LCI_SIM_ONLY("the simulator's largest registration and injected preemption");
  constexpr std::size_t message_bytes = 12 * 1024;  // two chunks
  constexpr int rounds = 300;
  const lci::sim::sweep_t sweep = two_threads_preempted([](lci::sim::run_options_t& options) {
    options.world.registration_size_max = 4096;
  });
  lci::sim::expect_runs_ok(2, sweep, [&](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    const int peer = 1 - env.rank();
    std::vector<char> buffer(message_bytes);
    lci::comp_t sync = lci::alloc_sync();
    if (env.rank() == 0) {
      for (int round = 0; round < rounds; ++round) {
        for (std::size_t at = 0; at < message_bytes; ++at) buffer[at] = byte_of(round, at);
        lci::status_t status = post_retrying(
            [&] { return lci::post_send(peer, buffer.data(), message_bytes, round, sync); });
        if (status.is_posted()) lci::sync_wait(sync, &status);
        require(status.is_done(), std::string("a send: ") + status.error.get_str());
      }
    } else {
      std::atomic<bool> over{false};
      env.run_threads(2, [&](int thread) {
        if (thread == 1) {
          // acquire: pairs with the release below; nothing else is read after.
          while (!over.load(std::memory_order_acquire)) (void)lci::progress();
          return;
        }
        for (int round = 0; round < rounds; ++round) {
          lci::status_t status = post_retrying(
              [&] { return lci::post_recv(peer, buffer.data(), message_bytes, round, sync); });
          while (status.is_posted() && !lci::sync_test(sync, &status)) (void)lci::progress();
          require(status.is_done() && status.size == message_bytes,
                  std::string("a receive: ") + status.error.get_str());
          for (std::size_t at = 0; at < message_bytes; ++at) {
            require(buffer[at] == byte_of(round, at),
                    "round " + std::to_string(round) + ": byte " + std::to_string(at) + " differs");
          }
        }
        // release: pairs with the progress thread's acquire.
        over.store(true, std::memory_order_release);
      });
    }
    lci::free_comp(&sync);
    lci::barrier();
    lci::g_runtime_fina();
  });
}

}  // namespace
