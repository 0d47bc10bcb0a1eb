// What the protocol registers, by what the network asks
// (net_device_attr_t::requires_local_mr; the simulator reports
// world_options_t::requires_local_mr). Rank 0 sends a rendezvous message and
// puts and gets bytes from buffers it never registered; rank 1 receives
// into an unregistered buffer and exposes a registered window. With local
// registration required, each of rank 0's three operations registers its
// buffer (and releases it); without, rank 0 registers nothing. Rank 1
// registers the receive buffer either way: a peer writes into it.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_world.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

constexpr std::size_t message_bytes = std::size_t{64} << 10;  // over a packet: rendezvous
constexpr std::size_t rma_bytes = std::size_t{4} << 10;        // over an inject
constexpr lci::tag_t tag = 5;

// Operations rank 0 posts from unregistered buffers: the rendezvous send,
// the put and the get.
constexpr std::uint64_t local_operations_count = 3;
void wait_done(lci::comp_t sync, const char* what) {
  lci::status_t status;
  while (!lci::sync_test(sync, &status)) (void)lci::progress();
  require(status.error.errorcode == lci::errorcode_t::done,
          std::string(what) + ": " + status.error.get_str());
}

void require_registrations(lci::sim::rank_env_t& env, std::uint64_t before,
                           std::uint64_t expected) {
  const std::uint64_t made = env.world().registrations_made(env.rank()) - before;
  require(made == expected, "rank " + std::to_string(env.rank()) + " registered " +
                                std::to_string(made) + " buffers, expected " +
                                std::to_string(expected));
}

void exchange(lci::sim::rank_env_t& env, bool requires_local_mr) {
  lci::g_runtime_init();
  std::vector<char> window(rma_bytes, 'w');
  lci::mr_t window_mr;
  lci::rmr_t rmrs[2] = {};
  lci::rmr_t mine = {};
  if (env.rank() == 1) {
    window_mr = lci::register_memory(window.data(), window.size());
    mine = lci::get_rmr(window_mr);
  }
  env.allgather(&mine, sizeof(mine), rmrs);
  const std::uint64_t before = env.world().registrations_made(env.rank());

  std::vector<char> message(message_bytes, env.rank() == 0 ? 'm' : 0);
  lci::comp_t sync = lci::alloc_sync();
  if (env.rank() == 0) {
    post_retrying([&] { return lci::post_send(1, message.data(), message.size(), tag, sync); });
    wait_done(sync, "the rendezvous send");
    std::vector<char> source(rma_bytes, 'p');
    post_retrying([&] { return lci::post_put(1, source.data(), source.size(), sync, 0, rmrs[1]); });
    wait_done(sync, "the put");
    std::vector<char> sink(rma_bytes, 0);
    post_retrying([&] { return lci::post_get(1, sink.data(), sink.size(), sync, 0, rmrs[1]); });
    wait_done(sync, "the get");
    require(sink == source, "the get did not read back what the put wrote");
    require_registrations(env, before, requires_local_mr ? local_operations_count : 0);
  } else {
    post_retrying([&] { return lci::post_recv(0, message.data(), message.size(), tag, sync); });
    wait_done(sync, "the receive");
    require(message == std::vector<char>(message_bytes, 'm'), "the message arrived damaged");
  }
  // Rank 1 keeps progressing here until rank 0's put and get are done.
  lci::barrier();
  if (env.rank() == 1) {
    require_registrations(env, before, 1);  // the receive buffer
    lci::deregister_memory(&window_mr);
  }
  lci::free_comp(&sync);
  lci::g_runtime_fina();
}

void expect_exchanges_ok(bool requires_local_mr) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [requires_local_mr](lci::sim::run_options_t& options) {
    options.log = false;
    options.world.requires_local_mr = requires_local_mr;
  };
  lci::sim::expect_runs_ok(2, sweep, [requires_local_mr](lci::sim::rank_env_t& env) {
    exchange(env, requires_local_mr);
  });
}

// A registration the program made for exactly the buffer covers it: the
// rendezvous send uses it, the protocol registers nothing more, and a post
// one byte longer than the registration is refused.
TEST(LocalRegistration, ARegistrationOfExactlyTheBufferCoversIt) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.log = false;
    options.world.requires_local_mr = true;
  };
  lci::sim::expect_runs_ok(2, sweep, [](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    std::vector<char> message(message_bytes + 1, env.rank() == 0 ? 'x' : 0);
    lci::comp_t sync = lci::alloc_sync();
    if (env.rank() == 0) {
      lci::mr_t mr = lci::register_memory(message.data(), message_bytes);
      const std::uint64_t before = env.world().registrations_made(env.rank());
      lci::runtime_test::expect_invalid_argument(
          "a send one byte past its mr",
          [&] { return lci::post_send_x(1, message.data(), message_bytes + 1, tag, sync).mr(mr)(); },
          {"mr: does not cover"});
      post_retrying(
          [&] { return lci::post_send_x(1, message.data(), message_bytes, tag, sync).mr(mr)(); });
      wait_done(sync, "the send from the program's registration");
      require_registrations(env, before, 0);
      lci::deregister_memory(&mr);
    } else {
      post_retrying([&] { return lci::post_recv(0, message.data(), message_bytes, tag, sync); });
      wait_done(sync, "the receive");
      require(std::string(message.data(), message_bytes) == std::string(message_bytes, 'x'),
              "the message arrived damaged");
    }
    lci::barrier();
    lci::free_comp(&sync);
    lci::g_runtime_fina();
  });
}

TEST(LocalRegistration, RegistersLocalBuffersWhenTheNetworkRequiresIt) {
  LCI_SIM_ONLY("counts the simulator's registrations");
  expect_exchanges_ok(/*requires_local_mr=*/true);
}

TEST(LocalRegistration, RegistersOnlyWhatAPeerAddressesOtherwise) {
  LCI_SIM_ONLY("counts the simulator's registrations");
  expect_exchanges_ok(/*requires_local_mr=*/false);
}

// Registrations a program leaves are deregistered with their device (a
// verbs PD, like an ofi domain, refuses to close with one standing; the
// simulator reports such a device as a leftover): one on a device it frees,
// whose handle is then refused, and one on the default device at
// g_runtime_fina.
TEST(LocalRegistration, LeftRegistrationsGoWithTheirDevice) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(2, sweep, [](lci::sim::rank_env_t&) {
    lci::g_runtime_init();
    std::vector<char> buffer(rma_bytes);
    lci::device_t device = lci::alloc_device();
    lci::mr_t on_freed = lci::register_memory_x(buffer.data(), buffer.size()).device(device)();
    lci::mr_t on_default = lci::register_memory(buffer.data(), buffer.size());
    (void)on_default;  // left for g_runtime_fina
    lci::free_device(&device);
    bool refused = false;
    try {
      lci::deregister_memory(&on_freed);
    } catch (const std::invalid_argument&) {
      refused = true;
    }
    require(refused, "deregister_memory accepted a registration its freed device took along");
    lci::g_runtime_fina();
  });
}

// A network that refuses every registration: register_memory asks it as
// many times as its error message says, then throws. (The attempts are a
// bound of the runtime's own; the count is what the message promises.)
TEST(LocalRegistration, ARefusedRegistrationIsAskedAsOftenAsTheErrorSays) {
  LCI_SIM_ONLY("counts the simulator's refusals");
  lci::sim::run_options_t options;
  options.log = false;
  options.world.faults.rate(lci::sim::fault_kind_t::registration_failure) = 1.0;
  std::uint64_t refused_count = 0;
  std::string message;
  const lci::sim::run_report_t report =
      lci::sim::run_ranks(1, options, [&](lci::sim::rank_env_t& env) {
        lci::g_runtime_init();
        std::vector<char> buffer(rma_bytes);
        const auto kind = lci::sim::fault_kind_t::registration_failure;
        const std::uint64_t before = env.world().faults_injected(kind);
        try {
          lci::mr_t mr = lci::register_memory(buffer.data(), buffer.size());
          lci::deregister_memory(&mr);
        } catch (const std::runtime_error& error) {
          message = error.what();
        }
        refused_count = env.world().faults_injected(kind) - before;
        lci::g_runtime_fina();
      });
  ASSERT_TRUE(report.ok) << report.report;
  const std::string marker = " bytes ";
  const std::size_t at = message.find(marker);
  ASSERT_NE(at, std::string::npos) << "register_memory did not throw: " << message;
  const std::uint64_t promised = std::stoull(message.substr(at + marker.size()));
  EXPECT_EQ(refused_count, promised) << message;
}

}  // namespace
