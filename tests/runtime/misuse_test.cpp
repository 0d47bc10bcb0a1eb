// The misuse matrix: every fatal misuse of the public API throws, with a
// message naming the argument and its value, before anything changes; the
// runtime then still works (a send/recv round trip between the ranks
// succeeds) and no message is lost (the harness checks the network is empty
// at the end of every run).
#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::expect_throws;
using lci::runtime_test::post_retrying;
using lci::runtime_test::require;
using lci::runtime_test::round_trip;

int peer_of(int rank) { return 1 - rank; }

// Runs `misuse` on both ranks of a two-rank world over seeds and in
// concurrent mode, then proves the runtime still works.
void run_misuse(const std::function<void(lci::sim::rank_env_t&)>& misuse) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.world.devices_per_rank_max = 8;  // the tests allocate a few devices
    options.log = false;  // a failure's report names the seed and the replay line
  };
  lci::sim::expect_runs_ok(2, sweep, [&misuse](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    misuse(env);
    round_trip(peer_of(env.rank()), 1000);
    lci::barrier();
    lci::g_runtime_fina();
  });
}

TEST(Misuse, RankOutOfRange) {
  run_misuse([](lci::sim::rank_env_t&) {
    char buffer[8] = {};
    lci::comp_t sync = lci::alloc_sync();
    expect_throws<std::invalid_argument>(
        "post_send to rank 5", [&] { (void)lci::post_send(5, buffer, 8, 0, sync); },
        {"rank = 5", "out of range [0, 2)"});
    expect_throws<std::invalid_argument>(
        "post_recv from rank 2", [&] { (void)lci::post_recv(2, buffer, 8, 0, sync); },
        {"rank = 2"});
    expect_throws<std::invalid_argument>(
        "post_am to rank -2", [&] { (void)lci::post_am(-2, buffer, 8, sync, 1); },
        {"rank = -2"});
    // ANY_SOURCE is only a receive's wildcard.
    expect_throws<std::invalid_argument>(
        "post_send to ANY_SOURCE",
        [&] { (void)lci::post_send(lci::ANY_SOURCE, buffer, 8, 0, sync); }, {"rank = -1"});
    lci::free_comp(&sync);
  });
}

TEST(Misuse, NegativeOrOverflowingSize) {
  run_misuse([](lci::sim::rank_env_t& env) {
    char buffer[8] = {};
    lci::comp_t sync = lci::alloc_sync();
    const int peer = peer_of(env.rank());
    const std::size_t size = static_cast<std::size_t>(-1);
    expect_throws<std::invalid_argument>(
        "post_send of size_t(-1) bytes", [&] { (void)lci::post_send(peer, buffer, size, 0, sync); },
        {"size = 18446744073709551615", "negative or overflowing"});
    expect_throws<std::invalid_argument>(
        "post_recv of size_t(-1) bytes", [&] { (void)lci::post_recv(peer, buffer, size, 0, sync); },
        {"size = 18446744073709551615"});
    lci::free_comp(&sync);
  });
}

TEST(Misuse, SizeOverMaxMsgSize) {
  run_misuse([](lci::sim::rank_env_t& env) {
    const std::size_t size = lci::sim::world_options_t().max_msg_size + 1;
    std::vector<char> buffer(size);
    lci::comp_t sync = lci::alloc_sync();
    const int peer = peer_of(env.rank());
    const std::string named = "size = " + std::to_string(size);
    expect_throws<std::invalid_argument>(
        "post_send over max_msg_size",
        [&] { (void)lci::post_send(peer, buffer.data(), size, 0, sync); }, {named, "max_msg_size"});
    expect_throws<std::invalid_argument>(
        "post_am over max_msg_size",
        [&] { (void)lci::post_am(peer, buffer.data(), size, sync, 1); }, {named, "max_msg_size"});
    lci::free_comp(&sync);
  });
}

TEST(Misuse, EmptyRmrForPutAndGet) {
  run_misuse([](lci::sim::rank_env_t& env) {
    char buffer[8] = {};
    lci::comp_t sync = lci::alloc_sync();
    const int peer = peer_of(env.rank());
    expect_throws<std::invalid_argument>(
        "post_put with an empty rmr",
        [&] { (void)lci::post_put(peer, buffer, 8, sync, 0, lci::rmr_t{}); },
        {"post_put", "rmr is empty"});
    expect_throws<std::invalid_argument>(
        "post_get with an empty rmr",
        [&] { (void)lci::post_get(peer, buffer, 8, sync, 0, lci::rmr_t{}); },
        {"post_get", "rmr is empty"});
    lci::free_comp(&sync);
  });
}

TEST(Misuse, FreeCompTwice) {
  run_misuse([](lci::sim::rank_env_t&) {
    lci::comp_t sync = lci::alloc_sync();
    const lci::comp_t copy = sync;
    lci::free_comp(&sync);
    expect_throws<std::invalid_argument>("free_comp of the emptied handle",
                                         [&] { lci::free_comp(&sync); },
                                         {"free_comp", "comp is empty"});
    lci::comp_t stale = copy;
    expect_throws<std::invalid_argument>("free_comp of a copy of a freed handle",
                                         [&] { lci::free_comp(&stale); },
                                         {"free_comp: comp", "not a live resource"});
  });
}

// A graph whose node's operation is in flight would be signalled after it
// is gone: free_comp refuses, and the graph stays usable.
TEST(Misuse, FreeGraphWithANodeInFlight) {
  run_misuse([](lci::sim::rank_env_t&) {
    lci::comp_t graph = lci::alloc_graph();
    const lci::graph_node_t node =
        lci::graph_add_node(graph, [](void*) { return lci::status_t(lci::errorcode_t::posted); });
    lci::graph_start(graph);
    expect_throws<std::logic_error>("free_comp of a running graph",
                                    [&] { lci::free_comp(&graph); },
                                    {"free_comp", "in flight"});
    require(!graph.is_empty(), "the refused free_comp emptied the handle");
    lci::graph_node_mark_complete(node);
    require(lci::graph_test(graph).is_done(), "the graph's round did not end");
    lci::free_comp(&graph);
  });
}

TEST(Misuse, FreeDeviceTwice) {
  run_misuse([](lci::sim::rank_env_t&) {
    lci::device_t device = lci::alloc_device();  // collective: both ranks
    const lci::device_t copy = device;
    lci::free_device(&device);
    expect_throws<std::invalid_argument>("free_device of the emptied handle",
                                         [&] { lci::free_device(&device); },
                                         {"free_device", "device is empty"});
    lci::device_t stale = copy;
    expect_throws<std::invalid_argument>("free_device of a copy of a freed handle",
                                         [&] { lci::free_device(&stale); },
                                         {"free_device: device", "not a live resource"});
  });
}

TEST(Misuse, DeregisterMemoryTwice) {
  run_misuse([](lci::sim::rank_env_t&) {
    std::vector<char> buffer(256);
    lci::mr_t mr = lci::register_memory(buffer.data(), buffer.size());
    const lci::mr_t copy = mr;
    lci::deregister_memory(&mr);
    expect_throws<std::invalid_argument>("deregister_memory of the emptied handle",
                                         [&] { lci::deregister_memory(&mr); },
                                         {"deregister_memory", "mr is empty"});
    lci::mr_t stale = copy;
    expect_throws<std::invalid_argument>("deregister_memory of a copy of a deregistered handle",
                                         [&] { lci::deregister_memory(&stale); },
                                         {"deregister_memory: mr", "not a live resource"});
  });
}

TEST(Misuse, ResourcesOfAnotherRuntime) {
  run_misuse([](lci::sim::rank_env_t& env) {
    lci::runtime_t other = lci::alloc_runtime();  // collective: both ranks
    char buffer[8] = {};
    lci::comp_t sync = lci::alloc_sync();
    const lci::device_t other_device = lci::get_default_device_x().runtime(other)();
    expect_throws<std::invalid_argument>(
        "a post on another runtime's device",
        [&] { (void)lci::post_send_x(peer_of(env.rank()), buffer, 8, 0, sync).device(other_device)(); },
        {"device", "belongs to another runtime"});
    lci::comp_t other_comp = lci::alloc_sync_x().runtime(other)();
    expect_throws<std::invalid_argument>("free_comp through the wrong runtime",
                                         [&] { lci::free_comp(&other_comp); },
                                         {"free_comp: comp", "another runtime"});
    lci::free_comp_x(&other_comp).runtime(other)();
    lci::free_comp(&sync);
    lci::free_runtime(&other);
  });
}

TEST(Misuse, CallsWithoutARuntime) {
  run_misuse([](lci::sim::rank_env_t& env) {
    lci::g_runtime_fina();
    char buffer[8] = {};
    expect_throws<std::logic_error>(
        "post_send after g_runtime_fina",
        [&] { (void)lci::post_send(peer_of(env.rank()), buffer, 8, 0, lci::COMP_NULL); },
        {"no runtime", "g_runtime_init"});
    expect_throws<std::logic_error>("get_rank_me after g_runtime_fina",
                                    [] { (void)lci::get_rank_me(); }, {"no runtime"});
    expect_throws<std::logic_error>("progress after g_runtime_fina",
                                    [] { (void)lci::progress(); }, {"no runtime"});
    expect_throws<std::logic_error>("g_runtime_fina twice", [] { lci::g_runtime_fina(); },
                                    {"g_runtime_fina", "no global runtime"});
    lci::g_runtime_init();  // collective: the round trip runs on a new runtime
  });
}

TEST(Misuse, RemoteCompOnAReceive) {
  run_misuse([](lci::sim::rank_env_t& env) {
    char buffer[8] = {};
    lci::comp_t sync = lci::alloc_sync();
    expect_throws<std::invalid_argument>(
        "post_comm IN with remote_comp and no rmr (Table 1)",
        [&] {
          (void)lci::post_comm_x(lci::direction_t::IN, peer_of(env.rank()), buffer, 8, sync)
              .remote_comp(1)();
        },
        {"direction IN", "remote_comp = 1", "no rmr"});
    lci::free_comp(&sync);
  });
}

TEST(Misuse, RegisterRcompNotReserved) {
  run_misuse([](lci::sim::rank_env_t&) {
    lci::comp_t cq = lci::alloc_cq();
    const lci::rcomp_t first = lci::reserve_rcomps(2);
    const lci::rcomp_t beyond = first + 2;
    expect_throws<std::invalid_argument>(
        "register_rcomp with an id never reserved",
        [&] { (void)lci::register_rcomp_x(cq).rcomp(beyond)(); },
        {"register_rcomp", "rcomp = " + std::to_string(beyond), "reserve_rcomps"});
    require(lci::register_rcomp_x(cq).rcomp(first + 1)() == first + 1,
            "a reserved rcomp is accepted after the refusal");
    lci::deregister_rcomp(first + 1);
    lci::free_comp(&cq);
  });
}

// ---- truncation: a message larger than the receive it matches ----

constexpr lci::tag_t truncated_tag = 77;
constexpr std::size_t capacity_bytes = 8;

// The receive is posted first; the sender sends `size` bytes of 's'.
// progress() reports the truncation (length_error naming both sizes and the
// sender) after the receive completed: an eager one with its capacity
// filled; a zero-copy one (rendezvous) fatal with nothing written, and its
// sender's send fatal too. Then the receiver frees its buffer and both keep
// communicating: nothing may write into the freed buffer (asan).
void truncated_after_posting(lci::sim::rank_env_t& env, std::size_t size) {
  const bool zero_copy = size > lci::get_max_bcopy_size();
  const int me = env.rank();
  std::vector<char> payload(size, 's');
  std::vector<char> in(capacity_bytes, 0);
  lci::comp_t sync = lci::alloc_sync();
  if (me == 1) {
    const lci::status_t posted =
        post_retrying([&] { return lci::post_recv(0, in.data(), in.size(), truncated_tag, sync); });
    require(posted.is_posted(), "the receive waits for its message");
  }
  env.barrier();  // the receive is in place before the message leaves
  lci::status_t status;
  if (me == 0) {
    status = post_retrying(
        [&] { return lci::post_send(1, payload.data(), payload.size(), truncated_tag, sync); });
    if (status.is_posted()) lci::sync_wait(sync, &status);
    require(zero_copy ? status.error.errorcode == lci::errorcode_t::fatal : status.is_done(),
            std::string("the truncated send's status ") + status.error.get_str());
  } else {
    expect_throws<std::length_error>(
        "a truncated message", [&] { lci::sync_wait(sync, &status); },
        {std::to_string(size) + " bytes from rank 0", "tag " + std::to_string(truncated_tag),
         "truncated", std::to_string(capacity_bytes) + " bytes"});
    // The receive itself finished before the throw.
    require(lci::sync_test(sync, &status), "the truncated receive is still in flight");
    if (zero_copy) {
      require(status.error.errorcode == lci::errorcode_t::fatal && status.size == 0,
              std::string("the truncated zero-copy receive's status ") + status.error.get_str());
      for (char c : in) require(c == 0, "a truncated zero-copy receive wrote its buffer");
    } else {
      require(status.is_done() && status.size == capacity_bytes, "the truncated receive's size");
      for (char c : in) require(c == 's', "the truncated receive's data");
    }
    in.clear();
    in.shrink_to_fit();  // freed: a late write is a use-after-free (asan)
  }
  round_trip(1 - me, 78);
  lci::free_comp(&sync);
}

TEST(Misuse, TruncatedEagerMessage) {
  run_misuse([](lci::sim::rank_env_t& env) { truncated_after_posting(env, 100); });
}

TEST(Misuse, TruncatedZeroCopyMessage) {
  run_misuse([](lci::sim::rank_env_t& env) { truncated_after_posting(env, 64 << 10); });
}

// The message is already waiting when the receive is posted: post_recv
// itself reports the truncation, having consumed the message.
TEST(Misuse, TruncatedMessageAlreadyWaiting) {
  run_misuse([](lci::sim::rank_env_t& env) {
    const lci::tag_t token_tag = truncated_tag + 1;
    std::vector<char> payload(100, 'w');
    std::vector<char> in(capacity_bytes, 0);
    char token = 0;
    lci::comp_t sync = lci::alloc_sync();
    lci::status_t status;
    if (env.rank() == 0) {
      // Network semantic: done once the message sits in rank 1's completion
      // queue, so the token sent next lands behind it there.
      status = post_retrying([&] {
        return lci::post_send_x(1, payload.data(), payload.size(), truncated_tag, sync)
            .comp_semantic(lci::comp_semantic_t::network)();
      });
      if (status.is_posted()) lci::sync_wait(sync, &status);
      status = post_retrying([&] { return lci::post_send(1, &token, 1, token_tag, sync); });
      if (status.is_posted()) lci::sync_wait(sync, &status);
    } else {
      // Completions are polled in order: once the token's receive is done,
      // the message ahead of it waits in the matching engine. (Rank 1 must
      // progress meanwhile: rank 0's send may need a receive buffer that
      // only rank 1's progress posts.)
      status = post_retrying([&] { return lci::post_recv(0, &token, 1, token_tag, sync); });
      if (status.is_posted()) lci::sync_wait(sync, &status);
      expect_throws<std::length_error>(
          "a truncated waiting message",
          [&] { (void)lci::post_recv(0, in.data(), in.size(), truncated_tag, sync); },
          {"100 bytes from rank 0", "truncated", std::to_string(capacity_bytes) + " bytes"});
      for (char c : in) require(c == 'w', "the truncated receive's data");
    }
    lci::free_comp(&sync);
  });
}

}  // namespace
