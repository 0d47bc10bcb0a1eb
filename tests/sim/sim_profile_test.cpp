// Provider profiles (sim/sim_profile.hpp): each behaviour a profile gives
// the simulated device, shown on the raw device with two to six ranks in
// deterministic mode, where the ranks' order is under the test's control
// (a rank sitting in an out-of-band barrier makes no device call, as a
// process that does not poll). docs/design/sim_network.md, "Provider
// profiles", says where each value comes from.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_profile.hpp"
#include "sim/sim_seed.hpp"
#include "sim/sim_world.hpp"
#include "tests/sim/sim_network_workload.hpp"

namespace {

using lci::backend::net_device_attr_t;
using lci::backend::net_device_t;
using lci::backend::net_fault_t;
using lci::backend::net_mr_t;
using lci::backend::net_opcode_t;
using lci::backend::net_rmr_t;
using lci::backend::net_status_t;
using lci::sim::profile_kind_t;
using lci::sim::rank_env_t;
using lci::sim::refusal_t;
using lci::sim::run_options_t;
using lci::sim::run_report_t;
using lci::sim::testing::require;

// Loops of refused posts and idle polls stay short (10): every such call is
// a quiet wait, and when every rank has made 64 in a row the scheduler
// calls the run a deadlock (docs/design/sim_network.md, "Scheduling points
// and deadlock") -- which is what a program stuck so for good gets.

// Deterministic options with `profile` and nothing from the environment
// but the seed (these scenarios count posts and polls exactly).
run_options_t profile_options(profile_kind_t profile, std::uint64_t seed) {
  run_options_t options = lci::sim::default_run_options(seed);
  options.world = lci::sim::world_options_t{};
  options.world.seed = seed;
  lci::sim::apply_provider_profile(&options.world, profile);
  options.log = false;
  return options;
}

// One device and what its polls returned, by kind.
struct endpoint_t {
  endpoint_t(rank_env_t& env, const net_device_attr_t& requested = {})
      : env(env), device(env.context().alloc_device(requested)) {}

  std::size_t poll() {
    net_status_t statuses[256];
    const std::size_t count = device->poll_comp(statuses, 256);
    for (std::size_t i = 0; i < count; ++i) {
      const net_status_t& status = statuses[i];
      if (status.opcode == net_opcode_t::recv) {
        recvs.push_back(status);
      } else if (status.opcode == net_opcode_t::remote_write) {
        remote_writes.push_back(status);
      } else {
        local.push_back(status);
      }
    }
    return count;
  }
  template <typename Op>
  void post(const char* what, Op&& op) {
    for (;;) {
      const lci::error_t error = op();
      if (!error.is_retry()) {
        require(error.is_done() || error.is_posted(), std::string(what) + " failed");
        return;
      }
      poll();
      env.wait(what);
    }
  }
  template <typename Done>
  void wait_for(const char* what, Done&& done) {
    while (!done()) {
      poll();
      env.wait(what);
    }
  }
  // Every rank: one zero-byte message to every peer and one from each, so
  // that the connections are up (both sides polled after the request).
  void connect_all() {
    const int ranks = env.ranks_count();
    for (int peer = 0; peer < ranks; ++peer) {
      if (peer == env.rank()) continue;
      post("post_recv", [&] { return device->post_recv(nullptr, 0, {}, nullptr); });
    }
    env.barrier();
    for (int peer = 0; peer < ranks; ++peer) {
      if (peer == env.rank()) continue;
      post("connect", [&] { return device->post_sends(peer, nullptr, 0, 0); });
    }
    const std::size_t expected = recvs.size() + static_cast<std::size_t>(ranks - 1);
    wait_for("connections", [&] { return recvs.size() == expected; });
    env.barrier();  // nobody stops polling before everyone is connected
  }

  rank_env_t& env;
  std::unique_ptr<net_device_t> device;
  std::vector<net_status_t> local;
  std::vector<net_status_t> recvs;
  std::vector<net_status_t> remote_writes;
};

// The rmr rank 1 publishes of `bytes` (registered on `ep`; others: empty).
net_rmr_t share_region(endpoint_t& ep, std::vector<char>* bytes, net_mr_t* mr) {
  net_rmr_t mine;
  if (ep.env.rank() == 1) {
    ep.post("register", [&] { return ep.device->register_memory(bytes->data(), bytes->size(), mr); });
    mine = ep.device->get_rmr(*mr);
  }
  std::vector<net_rmr_t> all(static_cast<std::size_t>(ep.env.ranks_count()));
  ep.env.allgather(&mine, sizeof(mine), all.data());
  return all[1];
}

void expect_ok(const run_report_t& report) { EXPECT_TRUE(report.ok) << report.report; }

TEST(SimProfile, DevicesReportWhatTheOfiBackendResolves) {
  struct expected_t {
    profile_kind_t profile;
    std::size_t inject, sends, recvs, sends_cap, registrations;
    bool local_mr;
  };
  const expected_t cases[] = {
      {profile_kind_t::default_profile, 64, 32, 32, 4000, 16, true},
      {profile_kind_t::shm, 4096, 256, 256, 1024, 0, false},
      {profile_kind_t::tcp, 64, 256, 256, 2048, 0, false},
  };
  for (const expected_t& c : cases) {
    const run_report_t report =
        lci::sim::run_ranks(1, profile_options(c.profile, 1), [&](rank_env_t& env) {
          auto device = env.context().alloc_device({});
          const net_device_attr_t& attr = device->attr();
          EXPECT_EQ(attr.inject_size_max, c.inject);
          EXPECT_EQ(attr.net_max_sends, c.sends);
          EXPECT_EQ(attr.net_max_recvs, c.recvs);
          EXPECT_EQ(attr.registrations_max, c.registrations);
          EXPECT_EQ(attr.requires_local_mr, c.local_mr);
          if (c.profile != profile_kind_t::default_profile) {
            EXPECT_EQ(attr.max_msg_size, std::size_t{0xFFFFFFFFu});
            EXPECT_GE(attr.net_max_cqes, attr.net_max_sends + attr.net_max_recvs + 64);
          }
          net_device_attr_t large;
          large.net_max_sends = 4000;
          large.net_max_cqes = 1;
          auto capped = env.context().alloc_device(large);
          EXPECT_EQ(capped->attr().net_max_sends, c.sends_cap);
        });
    expect_ok(report);
  }
}

TEST(SimProfile, EnvironmentSelectsTheProfileAndTheOptionLineNamesIt) {
  ASSERT_EQ(::setenv("LCI_SIM_PROFILE", "tcp", 1), 0);
  const run_options_t options = lci::sim::default_run_options(1);
  ::unsetenv("LCI_SIM_PROFILE");
  EXPECT_EQ(options.world.profile.kind, profile_kind_t::tcp);
  EXPECT_EQ(options.world.inject_size_max, 64u);
  EXPECT_TRUE(options.world.rma_waits_for_target);
  EXPECT_NE(lci::sim::describe_world_options(options.world).find("profile=tcp"), std::string::npos);
  EXPECT_NE(lci::sim::describe_world_options(lci::sim::world_options_t{}).find("profile=default"),
            std::string::npos);
}

// Both providers refuse the first post to a peer (-FI_EAGAIN) until the
// peer's endpoint progressed; the default simulator accepts it at once.
TEST(SimProfile, FirstPostToAPeerWaitsForThePeersNextCall) {
  constexpr int attempts = 10;
  for (profile_kind_t profile :
       {profile_kind_t::default_profile, profile_kind_t::shm, profile_kind_t::tcp}) {
    int refused = 0;
    bool accepted_after_call = false;
    run_options_t options = profile_options(profile, 3);
    const run_report_t report = lci::sim::run_ranks(2, options, [&](rank_env_t& env) {
      endpoint_t ep(env);
      if (env.rank() == 1) {
        ep.post("post_recv", [&] { return ep.device->post_recv(nullptr, 0, {}, nullptr); });
      }
      env.barrier();  // rank 1's last call before rank 0's request
      if (env.rank() == 0) {
        for (int i = 0; i < attempts; ++i) {
          const lci::error_t error = ep.device->post_sends(1, nullptr, 0, 0);
          if (!error.is_retry()) break;
          ++refused;
          ep.poll();
          env.wait("refused");
        }
      }
      env.barrier();  // [A] rank 1 made no call since rank 0's request...
      if (env.rank() == 1) ep.poll();  // ...and makes one now
      env.barrier();  // [B]
      if (env.rank() == 0 && refused == attempts) {
        accepted_after_call = ep.device->post_sends(1, nullptr, 0, 0).is_done();
      }
      env.barrier();
      if (env.rank() == 1) ep.wait_for("the message", [&] { return ep.recvs.size() == 1; });
    });
    expect_ok(report);
    if (profile == profile_kind_t::default_profile) {
      EXPECT_EQ(refused, 0);
    } else {
      EXPECT_EQ(refused, attempts) << lci::sim::get_profile_name(profile);
      EXPECT_TRUE(accepted_after_call) << lci::sim::get_profile_name(profile);
    }
  }
}

// shm: a delivery-complete put of at most the inject size to a peer that
// does not progress refuses every other post to that peer until the put
// completes (which takes the peer's call).
TEST(SimProfile, ShmSmallPutHoldsThePeerUntilItCompletes) {
  constexpr int attempts = 10;
  int refused = 0;
  bool put_completed_early = false;
  const run_report_t report =
      lci::sim::run_ranks(2, profile_options(profile_kind_t::shm, 5), [&](rank_env_t& env) {
        endpoint_t ep(env);
        ep.connect_all();
        std::vector<char> region(64, '\0');
        net_mr_t mr;
        const net_rmr_t rmr = share_region(ep, &region, &mr);
        const std::uint64_t word = 0x1234;  // the put's source, until it completes
        if (env.rank() == 0) {
          ep.post("post_put", [&] { return ep.device->post_put(1, &word, 8, {}, 0, rmr, nullptr); });
          for (int i = 0; i < attempts; ++i) {
            if (!ep.device->post_sends(1, nullptr, 0, 0).is_retry()) break;
            ++refused;
            ep.poll();
            env.wait("refused");
          }
          put_completed_early = !ep.local.empty();
        }
        env.barrier();  // rank 1 has made no call since the put
        if (env.rank() == 1) {
          ep.post("post_recv", [&] { return ep.device->post_recv(nullptr, 0, {}, nullptr); });
          ep.wait_for("the send", [&] { return ep.recvs.size() == 2; });  // 1: connect_all's
          std::uint64_t landed;
          std::memcpy(&landed, region.data(), 8);
          require(landed == 0x1234, "the put did not land");
        } else {
          ep.wait_for("the put", [&] { return ep.local.size() == 1; });
          ep.post("post_sends", [&] { return ep.device->post_sends(1, nullptr, 0, 0); });
        }
        env.barrier();
        if (env.rank() == 1) ep.device->deregister_memory(&mr);
      });
  expect_ok(report);
  EXPECT_EQ(refused, attempts);
  EXPECT_FALSE(put_completed_early);
}

// shm: at most 512 delivery-complete puts over the inject size in flight
// to one peer that does not progress.
TEST(SimProfile, ShmLargePutsPerPeerAreBounded) {
  constexpr std::size_t size = 8192;
  constexpr std::size_t puts_count = 600;
  std::size_t accepted_while_idle = 0;
  std::uint64_t refusals = 0;
  const run_report_t report =
      lci::sim::run_ranks(2, profile_options(profile_kind_t::shm, 6), [&](rank_env_t& env) {
        net_device_attr_t requested;
        requested.net_max_sends = 1024;
        endpoint_t ep(env, requested);
        ep.connect_all();
        std::vector<char> region(size, '\0');
        net_mr_t mr;
        const net_rmr_t rmr = share_region(ep, &region, &mr);
        std::vector<char> source(size, 'p');
        if (env.rank() == 0) {
          std::size_t posted = 0;
          for (int refused_in_row = 0; posted < puts_count && refused_in_row < 20;) {
            const lci::error_t error =
                ep.device->post_put(1, source.data(), size, {}, 0, rmr, nullptr);
            if (error.is_retry()) {
              ++refused_in_row;
              env.wait("refused");
              continue;
            }
            refused_in_row = 0;
            ++posted;
          }
          accepted_while_idle = posted;
          refusals = lci::sim::profile_refusals(env.world(), refusal_t::puts_per_peer);
        }
        env.barrier();
        if (env.rank() == 0) {
          for (std::size_t i = accepted_while_idle; i < puts_count; ++i) {
            ep.post("post_put", [&] {
              return ep.device->post_put(1, source.data(), size, {}, 0, rmr, nullptr);
            });
          }
          ep.wait_for("the puts", [&] { return ep.local.size() == puts_count; });
          ep.post("done", [&] { return ep.device->post_sends(1, nullptr, 0, 0); });
        } else {
          ep.post("post_recv", [&] { return ep.device->post_recv(nullptr, 0, {}, nullptr); });
          ep.wait_for("rank 0's last message", [&] { return ep.recvs.size() == 2; });
        }
        env.barrier();
        if (env.rank() == 1) ep.device->deregister_memory(&mr);
      });
  expect_ok(report);
  EXPECT_EQ(accepted_while_idle, 512u);
  EXPECT_GT(refusals, 0u);
}

// shm: a target's queue holds 1024 operations of all its senders together;
// beyond, every sender's post to it is refused until the target drains it.
TEST(SimProfile, ShmTargetQueueIsSharedBySenders) {
  constexpr int ranks = 6;
  constexpr std::size_t per_sender = 256;
  constexpr std::size_t total = per_sender * (ranks - 1);
  std::vector<std::size_t> accepted_while_idle(ranks, 0);
  std::uint64_t refusals = 0;
  run_report_t report =
      lci::sim::run_ranks(ranks, profile_options(profile_kind_t::shm, 7), [&](rank_env_t& env) {
        endpoint_t ep(env);
        ep.connect_all();
        const auto rank = static_cast<std::size_t>(env.rank());
        if (rank != 0) {
          std::size_t posted = 0;
          for (int refused_in_row = 0; posted < per_sender && refused_in_row < 20;) {
            if (ep.device->post_sends(0, &rank, sizeof(rank), 0).is_retry()) {
              ++refused_in_row;
              env.wait("refused");
              continue;
            }
            refused_in_row = 0;
            ++posted;
          }
          accepted_while_idle[rank] = posted;
        }
        env.barrier();  // rank 0 made no call since the flood began
        if (rank == 0) {
          refusals = lci::sim::profile_refusals(env.world(), refusal_t::target_queue_full);
          std::vector<char> arena(ep.device->attr().net_max_recvs * 8);
          const std::size_t before = ep.recvs.size();  // connect_all's
          std::size_t posted = 0;
          while (ep.recvs.size() - before < total) {
            while (posted - (ep.recvs.size() - before) < ep.device->attr().net_max_recvs &&
                   posted < total) {
              const std::size_t slot = posted % ep.device->attr().net_max_recvs;
              ep.post("post_recv", [&] {
                return ep.device->post_recv(arena.data() + slot * 8, 8, {}, nullptr);
              });
              ++posted;
            }
            ep.poll();
            env.wait("the flood");
          }
        } else {
          for (std::size_t i = accepted_while_idle[rank]; i < per_sender; ++i) {
            ep.post("post_sends", [&] { return ep.device->post_sends(0, &rank, sizeof(rank), 0); });
          }
        }
        env.barrier();
      });
  expect_ok(report);
  std::size_t sum = 0;
  for (std::size_t accepted : accepted_while_idle) sum += accepted;
  EXPECT_EQ(sum, 1024u);
  EXPECT_GT(refusals, 0u);
}

// Both providers keep completions past the CQ's depth (libfabric's util CQ
// overflow list): remote writes land although the target's queue is full.
TEST(SimProfile, CompletionQueueKeepsWhatOverflows) {
  constexpr std::size_t writes = 200;
  std::size_t largest_poll = 0;
  std::size_t depth = 0;
  const run_report_t report =
      lci::sim::run_ranks(2, profile_options(profile_kind_t::tcp, 8), [&](rank_env_t& env) {
        net_device_attr_t small;
        small.net_max_sends = 1;
        small.net_max_recvs = 2;
        small.net_max_cqes = 1;
        endpoint_t ep(env, env.rank() == 1 ? small : net_device_attr_t{});
        ep.connect_all();
        std::vector<char> region(writes * 8, '\0');
        net_mr_t mr;
        const net_rmr_t rmr = share_region(ep, &region, &mr);
        const std::uint64_t word = 7;  // the writes' source, until they complete
        if (env.rank() == 0) {
          for (std::size_t i = 0; i < writes; ++i) {
            ep.post("post_putImm", [&] {
              return ep.device->post_putImm(1, &word, 8, {}, i * 8, rmr, 1, nullptr);
            });
          }
        }
        env.barrier();  // every putImm waits at rank 1, which made no call
        if (env.rank() == 1) {
          depth = ep.device->attr().net_max_cqes;
          (void)ep.device->poll_comp(nullptr, 0);  // lands every write
          while (ep.remote_writes.size() < writes) {
            largest_poll = std::max(largest_poll, ep.poll());
            env.wait("remote writes");
          }
        } else {
          ep.wait_for("the writes", [&] { return ep.local.size() == writes; });
        }
        env.barrier();
        if (env.rank() == 1) ep.device->deregister_memory(&mr);
      });
  expect_ok(report);
  EXPECT_GT(largest_poll, depth) << "no poll returned more than the CQ's depth " << depth;
}

// shm checks no remote key: a refused put never completes and stalls the
// pair (its later posts to that peer are refused), touching nothing; a get
// completes with no fault (the target's bytes where they are registered
// memory, else poison). The other direction keeps working.
TEST(SimProfile, ShmDoesNotCheckRemoteKeys) {
  bool put_completed = false;
  int later_posts_refused = 0;
  net_status_t get_status;
  std::string oob_bytes;
  std::string registered_bytes;
  std::string leftovers;
  run_options_t options = profile_options(profile_kind_t::shm, 9);
  options.check_leftovers = false;  // the refused put is still in flight, as over shm
  const run_report_t report = lci::sim::run_ranks(2, options, [&](rank_env_t& env) {
    endpoint_t ep(env);
    ep.connect_all();
    std::vector<char> region(64, 'r');
    net_mr_t mr;
    net_rmr_t rmr = share_region(ep, &region, &mr);
    const std::uint64_t word = 0xBAD;  // a put source the network never releases
    if (env.rank() == 0) {
      std::vector<char> local(32, 'l');
      // A get past the region's end (unregistered memory): poison.
      ep.post("post_get", [&] {
        return ep.device->post_get(1, local.data(), 32, {}, 48, rmr, nullptr);
      });
      ep.wait_for("the get", [&] { return ep.local.size() == 1; });
      get_status = ep.local.back();
      oob_bytes.assign(local.data(), 32);
      // A get with a wrong key inside the registered region: its bytes.
      net_rmr_t wrong = rmr;
      wrong.rkey ^= 0x5000000000ull;
      ep.post("post_get", [&] {
        return ep.device->post_get(1, local.data(), 32, {}, 0, wrong, nullptr);
      });
      ep.wait_for("the get", [&] { return ep.local.size() == 2; });
      registered_bytes.assign(local.data(), 32);
      // A put with a wrong key: never completes; the pair stalls.
      ep.post("post_put", [&] { return ep.device->post_put(1, &word, 8, {}, 0, wrong, nullptr); });
      for (int i = 0; i < 10; ++i) {
        if (!ep.device->post_sends(1, nullptr, 0, 0).is_retry()) break;
        ++later_posts_refused;
        ep.poll();
        env.wait("the stalled pair");
      }
      put_completed = ep.local.size() > 2;
      ep.post("post_recv", [&] { return ep.device->post_recv(nullptr, 0, {}, nullptr); });
    } else {
      for (int i = 0; i < 10; ++i) {  // keeps calling: the put still never lands
        ep.poll();
        env.wait("idle");
      }
    }
    env.barrier();
    if (env.rank() == 1) {  // rank 1 -> rank 0 still works
      ep.post("post_sends", [&] { return ep.device->post_sends(0, nullptr, 0, 0); });
    } else {
      ep.wait_for("rank 1's message", [&] { return ep.recvs.size() == 2; });  // 1: connect_all's
    }
    env.barrier();
    if (env.rank() == 1) {
      require(std::string(region.data(), 64) == std::string(64, 'r'), "the victim's memory changed");
      leftovers = env.world().describe_leftovers();
    }
  });
  expect_ok(report);
  EXPECT_FALSE(put_completed);
  EXPECT_EQ(later_posts_refused, 10);
  EXPECT_EQ(get_status.fault, net_fault_t::none);
  EXPECT_EQ(get_status.opcode, net_opcode_t::read);
  EXPECT_EQ(oob_bytes, std::string(32, static_cast<char>(lci::sim::poison_byte)));
  EXPECT_EQ(registered_bytes, std::string(32, 'r'));
  EXPECT_NE(leftovers.find("rank 0 device 0: 1 ops never completed"), std::string::npos)
      << leftovers;
}

// shm reads a peer's memory without the peer's help (process_vm_readv);
// over tcp;ofi_rxm a get completes only once the peer polls.
TEST(SimProfile, GetNeedsThePeerOverTcpButNotOverShm) {
  for (profile_kind_t profile : {profile_kind_t::shm, profile_kind_t::tcp}) {
    bool completed_while_idle = false;
    const run_report_t report =
        lci::sim::run_ranks(2, profile_options(profile, 10), [&](rank_env_t& env) {
          endpoint_t ep(env);
          ep.connect_all();  // leaves one message received on each rank
          if (env.rank() == 1) {  // for rank 0's goodbye; before rank 0's get
            ep.post("post_recv", [&] { return ep.device->post_recv(nullptr, 0, {}, nullptr); });
          }
          std::vector<char> region(64, 'g');
          net_mr_t mr;
          const net_rmr_t rmr = share_region(ep, &region, &mr);
          std::vector<char> local(16);
          if (env.rank() == 0) {
            ep.post("post_get", [&] {
              return ep.device->post_get(1, local.data(), 16, {}, 0, rmr, nullptr);
            });
            for (int i = 0; i < 50 && ep.local.empty(); ++i) {
              ep.poll();
              env.wait("the get while the peer is idle");
            }
            completed_while_idle = !ep.local.empty();
          }
          env.barrier();  // rank 1 made no call since the get
          if (env.rank() == 0) {
            ep.wait_for("the get", [&] { return ep.local.size() == 1; });
            require(std::string(local.data(), 16) == std::string(16, 'g'), "get data");
            ep.post("goodbye", [&] { return ep.device->post_sends(1, nullptr, 0, 0); });
          } else {
            ep.wait_for("rank 0's goodbye", [&] { return ep.recvs.size() == 2; });
          }
          env.barrier();
          if (env.rank() == 1) ep.device->deregister_memory(&mr);
        });
    expect_ok(report);
    EXPECT_EQ(completed_while_idle, profile == profile_kind_t::shm)
        << lci::sim::get_profile_name(profile);
  }
}

// Profiles draw nothing: a seed still fixes the run.
TEST(SimProfile, SameSeedSameRun) {
  for (profile_kind_t profile : {profile_kind_t::shm, profile_kind_t::tcp}) {
    std::uint64_t hashes[2];
    for (std::uint64_t& hash : hashes) {
      const run_report_t report = lci::sim::run_ranks(
          3, profile_options(profile, 11),
          [](rank_env_t& env) { lci::sim::testing::ring_exchange(env, 40, nullptr); });
      expect_ok(report);
      hash = report.trace_hash;
    }
    EXPECT_EQ(hashes[0], hashes[1]) << lci::sim::get_profile_name(profile);
  }
}

}  // namespace
