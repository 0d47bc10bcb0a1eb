// Posting options that restrict what a post may return, and drained
// devices: allow_posted(false) makes every operation finish inside the post
// (done) or leave nothing behind (retry), waiting inside the post for the
// operations that complete later; test_drained() reports a
// device with any operation in flight (a rendezvous, a send awaiting its
// completion), not only a non-empty backlog.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"
#include "lci/util/atomic.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::expect_invalid_argument;
using lci::runtime_test::require;

int peer_of(int rank) { return 1 - rank; }

void run_two_ranks(const std::function<void(lci::sim::rank_env_t&)>& body) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(2, sweep, [&body](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    body(env);
    lci::barrier();
    lci::g_runtime_fina();
  });
}

// Rank 1's receive with allow_posted(false) returns retry while no message
// waits, and stores nothing: the message rank 0 sends after the barrier is
// taken by a later such receive (done, data in place), and the
// synchronizer passed along is never signalled.
TEST(AllowPosted, ReceiveFinishesAtOnceOrLeavesNothing) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    constexpr lci::tag_t tag = 77;
    char data[32];
    lci::comp_t sync = lci::alloc_sync();
    if (env.rank() == 1) {
      std::memset(data, 0, sizeof(data));
      const lci::status_t early =
          lci::post_recv_x(peer, data, sizeof(data), tag, sync).allow_posted(false)();
      require(early.is_retry(), "a receive before any message: not retry");
      lci::barrier();
      lci::status_t status;
      do {
        (void)lci::progress();
        status = lci::post_recv_x(peer, data, sizeof(data), tag, sync).allow_posted(false)();
        require(!status.is_posted(), "allow_posted(false) receive returned posted");
      } while (status.is_retry());
      require(status.is_done() && status.rank == peer && status.tag == tag &&
                  status.size == sizeof(data),
              "the at-once receive's status is wrong");
      for (char c : data) require(c == 'x', "the at-once receive's data is wrong");
      require(!lci::sync_test(sync, nullptr), "an at-once receive signalled its comp");
    } else {
      std::memset(data, 'x', sizeof(data));
      lci::barrier();
      const lci::status_t status = post_retrying([&] {
        return lci::post_send_x(peer, data, sizeof(data), tag, sync).allow_posted(false)();
      });
      require(status.is_done(), "a small buffer-copy send did not finish at once");
      require(!lci::sync_test(sync, nullptr), "an at-once send signalled its comp");
    }
    lci::free_comp(&sync);
  });
}

// Operations that complete later are waited for inside the post when
// allow_posted is false (upstream's semantic, which its programs rely on):
// rank 0's zero-copy send, zero-copy AM (COMP_NULL_RETRY), network-semantic
// send and COMP_NULL zero-copy send each return done once rank 1 took it;
// rank 0's get returns done with the data in place. The synchronizer passed
// along is never signalled. The pair allow_posted = false with
// allow_done = false, which leaves only retry, is still refused.
TEST(AllowPosted, OperationsThatCompleteLaterAreWaitedFor) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    const std::size_t large = lci::get_max_bcopy_size() * 2;
    std::vector<char> buffer(large, env.rank() == 0 ? 'z' : 'g');
    std::vector<char> got(large, 0);
    lci::mr_t mr = lci::register_memory(buffer.data(), buffer.size());
    lci::rmr_t rmr = lci::get_rmr(mr);
    lci::rmr_t all[2];
    env.allgather(&rmr, sizeof(rmr), all);
    lci::comp_t sync = lci::alloc_sync();
    lci::comp_t am_cq = lci::alloc_cq();
    const lci::rcomp_t rcomp = lci::register_rcomp(am_cq);
    lci::barrier();
    const auto require_done = [](const lci::status_t& status, const std::string& what) {
      require(status.is_done(), what + " with allow_posted = false returned " +
                                    std::string(status.error.get_str()));
    };
    if (env.rank() == 0) {
      require_done(post_retrying([&] {
                     return lci::post_send_x(peer, buffer.data(), large, 1, sync)
                         .allow_posted(false)();
                   }),
                   "a zero-copy send");
      require_done(post_retrying([&] {
                     return lci::post_am(peer, buffer.data(), large, lci::COMP_NULL_RETRY, rcomp);
                   }),
                   "a zero-copy AM");
      require_done(post_retrying([&] {
                     return lci::post_send_x(peer, buffer.data(), 8, 2, sync)
                         .comp_semantic(lci::comp_semantic_t::network)
                         .allow_posted(false)();
                   }),
                   "a network-semantic send");
      require_done(lci::post_send(peer, buffer.data(), large, 3, lci::COMP_NULL),
                   "a COMP_NULL zero-copy send");
      require_done(post_retrying([&] {
                     return lci::post_get_x(peer, got.data(), large, sync, 0, all[peer])
                         .allow_posted(false)();
                   }),
                   "a get");
      for (char c : got) require(c == 'g', "the get returned done before its data was in place");
      expect_invalid_argument("allow_posted and allow_done false",
                              [&] {
                                (void)lci::post_recv_x(peer, buffer.data(), 8, 1, sync)
                                    .allow_posted(false)
                                    .allow_done(false)();
                              },
                              {"allow_posted = false with allow_done = false"});
      require(!lci::sync_test(sync, nullptr), "a post that waited signalled its comp");
    } else {
      for (lci::tag_t tag : {1, 2, 3}) {
        const std::size_t size = tag == 2 ? 8 : large;
        lci::status_t status;
        do {
          status = lci::post_recv(peer, got.data(), size, tag, sync);
          if (status.is_retry()) (void)lci::progress();
        } while (status.is_retry());
        if (status.is_posted()) lci::sync_wait(sync, &status);
        require(status.is_done() && status.size == size, "receive " + std::to_string(tag));
        for (std::size_t i = 0; i < size; ++i) require(got[i] == 'z', "received data is wrong");
        std::fill(got.begin(), got.end(), 0);
        if (tag == 1) {  // the AM comes between the sends of tags 1 and 2
          lci::status_t am;
          while (!(am = lci::cq_pop(am_cq)).is_done()) (void)lci::progress();
          require(am.size == large, "the zero-copy AM's size");
          std::free(am.buffer);
        }
      }
    }
    lci::barrier();  // rank 0's get reads rank 1's buffer until here
    lci::deregister_memory(&mr);
    lci::free_comp(&am_cq);
    lci::free_comp(&sync);
  });
}

// Rank 0 posts a rendezvous send before rank 1 posts its receive (the
// barrier orders them): rank 0's device is not drained until the send
// finished, whatever the backlog holds; afterwards both devices drain.
TEST(TestDrained, ReportsARendezvousInFlight) {
  run_two_ranks([](lci::sim::rank_env_t& env) {
    const int peer = peer_of(env.rank());
    const std::size_t large = lci::get_max_bcopy_size() * 2;
    std::vector<char> buffer(large, env.rank() == 0 ? 'r' : 0);
    lci::comp_t sync = lci::alloc_sync();
    constexpr lci::tag_t tag = 5;
    if (env.rank() == 0) {
      const lci::status_t posted =
          post_retrying([&] { return lci::post_send(peer, buffer.data(), large, tag, sync); });
      require(posted.is_posted(), "a rendezvous send finished at once");
      require(lci::test_drained().is_retry(), "drained with a rendezvous send in flight");
      lci::barrier();
    } else {
      lci::barrier();
      const lci::status_t posted =
          post_retrying([&] { return lci::post_recv(peer, buffer.data(), large, tag, sync); });
      require(posted.is_posted(), "a rendezvous receive finished at once");
    }
    lci::status_t status;
    lci::sync_wait(sync, &status);
    require(status.is_done() && status.size == large, "the rendezvous failed");
    lci::wait_drained();
    require(lci::test_drained().is_done(), "not drained after wait_drained");
    if (env.rank() == 1) {
      for (char c : buffer) require(c == 'r', "the rendezvous data is wrong");
    }
    lci::free_comp(&sync);
  });
}

// A backlog step that a progress call on another thread popped and is
// re-running still counts: rank 0's thread 0 posts sends the full send
// queue refuses (allow_retry(false): they go to the backlog) while thread 1
// progresses the same device; when thread 0's wait_drained() returns, every
// send has finished and signalled its synchronizer. (A device that asked
// only whether its backlog queue was empty said "drained" while thread 1
// held the last step between its pop and its retry.)
TEST(TestDrained, CountsABacklogStepAnotherThreadIsRunning) {
  LCI_SIM_ONLY("injects faults through the simulated world");
  constexpr int sends_count = 24;
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 32;
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.world.faults.rate(lci::sim::fault_kind_t::send_queue_full) = 0.5;
    options.log = false;
  };
  lci::sim::expect_runs_ok(2, sweep, [](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    const int peer = peer_of(env.rank());
    std::vector<std::uint64_t> payloads(sends_count);
    std::vector<lci::comp_t> syncs(sends_count);
    for (lci::comp_t& sync : syncs) sync = lci::alloc_sync();
    if (env.rank() == 0) {
      lci::util::atomic<bool> posted_all{false};
      env.run_threads(2, [&](int thread) {
        if (thread == 1) {
          // acquire: pairs with the release below (only ends this loop).
          while (!posted_all.load(lci::util::mo_acquire)) {
            if (lci::progress().is_retry()) env.wait("progressing for the poster");
          }
          return;
        }
        std::vector<bool> done_at_once(sends_count);
        for (int i = 0; i < sends_count; ++i) {
          payloads[i] = 1000 + i;
          const lci::status_t status = lci::post_send_x(peer, &payloads[i], sizeof(std::uint64_t),
                                                        static_cast<lci::tag_t>(i), syncs[i])
                                           .allow_retry(false)();
          require(!status.is_retry(), "allow_retry(false) returned retry");
          done_at_once[i] = status.is_done();
        }
        lci::wait_drained();
        int backlogged = 0;
        for (int i = 0; i < sends_count; ++i) {
          if (done_at_once[i]) continue;  // done: its synchronizer is not signalled
          ++backlogged;
          require(lci::sync_test(syncs[i], nullptr),
                  "wait_drained returned before send " + std::to_string(i) + " finished");
        }
        require(backlogged > 0, "the full send queue refused no send");
        posted_all.store(true, lci::util::mo_release);
      });
    } else {
      for (int i = 0; i < sends_count; ++i) {
        post_retrying([&] {
          return lci::post_recv(peer, &payloads[i], sizeof(std::uint64_t),
                                static_cast<lci::tag_t>(i), syncs[i]);
        });
      }
      for (int i = 0; i < sends_count; ++i) {
        lci::status_t status;
        lci::sync_wait(syncs[i], &status);
        require(status.is_done() && payloads[i] == 1000u + i, "receive " + std::to_string(i));
      }
    }
    lci::barrier();
    for (lci::comp_t& sync : syncs) lci::free_comp(&sync);
    lci::g_runtime_fina();
  });
}

}  // namespace
