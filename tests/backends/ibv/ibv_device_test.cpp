// The ibv backend's own error handling (backends/ibv/ibv_device.hpp), on the
// emulated device, beyond what the conformance suite checks:
//   - a remote access error fails that one operation; the operations posted
//     behind it on the same QP (flushed by the verbs) still complete, once
//     the QP is re-established;
//   - a peer whose QPs are gone is unreachable: the operation fails with
//     peer_crashed naming the rank, the device reports the rank once
//     (peer_down), and later operations to it fail at once;
//   - a peer that frees its device (its process going on) is not reported.
// Two simulated ranks (fibers, seeded), each opening its own emulated HCA.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ibv/ibv_context.hpp"
#include "backends/ibv/ibv_device.hpp"
#include "backends/ibv_emu/ibv_emu_fabric.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "tests/backends/ibv/ibv_device_test_util.hpp"
#include "tests/backends/ibv/ibv_forwarding_verbs.hpp"

namespace lci::backend::ibv {
namespace {

using ibv_emu::emu_fabric_t;
using ibv_emu::emu_options_t;

// The responder keeps polling until the requester is done (as a runtime's
// progress does): its own QP, which the refused put moved to ERR, is
// re-established only inside its poll_comp, and the requester's retries
// give up if that takes longer than retry_cnt transport timeouts
// (docs/backends/ibv.md, "The device").
std::uint64_t run_remote_access_error(std::uint64_t seed) {
  constexpr std::size_t size = 256;
  constexpr std::size_t chunk = 32;
  bool requester_done = false;  // fibers of one OS thread: no atomics needed
  return run_two_ranks(seed, [&requester_done](sim::rank_env_t& env, ibv_context_t& context) {
    auto device = context.alloc_device({});
    std::vector<char> region(size, 'g');  // rank 1's exposed memory
    net_mr_t region_mr;
    post_retrying(env, *device,
                  [&] { return device->register_memory(region.data(), size, &region_mr); });
    const net_rmr_t mine = device->get_rmr(region_mr);
    net_rmr_t rmrs[2];
    env.allgather(&mine, sizeof(mine), rmrs);
    std::vector<net_status_t> statuses;
    if (env.rank() == 0) {
      std::vector<char> source(chunk, 'p');
      net_mr_t mr;
      post_retrying(env, *device, [&] { return device->register_memory(source.data(), chunk, &mr); });
      // 1: out of bounds (refused); 2: behind it on the same QP; 3: a send.
      post_retrying(env, *device, [&] {
        return device->post_put(1, source.data(), chunk, mr, size - 8, rmrs[1],
                                reinterpret_cast<void*>(1));
      });
      post_retrying(env, *device, [&] {
        return device->post_put(1, source.data(), chunk, mr, 0, rmrs[1],
                                reinterpret_cast<void*>(2));
      });
      post_retrying(env, *device, [&] {
        return device->post_send(1, "hello", 6, net_mr_t{}, 7, reinterpret_cast<void*>(3));
      });
      poll_until(env, *device, &statuses, [&] { return statuses.size() == 3; }, "completions");
      int faults = 0;
      for (const net_status_t& status : statuses) {
        const auto context_id = reinterpret_cast<std::uintptr_t>(status.user_context);
        EXPECT_EQ(status.rank, 1);
        if (context_id == 1) {
          ++faults;
          EXPECT_EQ(status.fault, net_fault_t::protection) << describe_fault(status);
          EXPECT_EQ(status.opcode, net_opcode_t::write);
          EXPECT_EQ(status.fault_address, rmrs[1].base + size - 8);
        } else {
          EXPECT_EQ(status.fault, net_fault_t::none)
              << "operation " << context_id << ": " << describe_fault(status);
        }
      }
      EXPECT_EQ(faults, 1);
      requester_done = true;
      device->deregister_memory(&mr);
    } else {
      std::vector<char> buffer(64);
      net_mr_t mr;
      post_retrying(env, *device, [&] { return device->register_memory(buffer.data(), 64, &mr); });
      post_retrying(env, *device, [&] { return device->post_recv(buffer.data(), 64, mr, nullptr); });
      poll_until(env, *device, &statuses, [&] { return !statuses.empty() && requester_done; },
                 "the send and the requester");
      EXPECT_EQ(statuses[0].opcode, net_opcode_t::recv);
      EXPECT_EQ(statuses[0].imm_data, 7u);
      EXPECT_STREQ(buffer.data(), "hello");
      device->deregister_memory(&mr);
    }
    env.barrier();  // rank 0 saw its completions: the good put has landed
    if (env.rank() == 1) {
      EXPECT_EQ(std::string(region.data(), chunk), std::string(chunk, 'p')) << "the good put";
      EXPECT_EQ(std::string(region.data() + chunk, size - chunk), std::string(size - chunk, 'g'))
          << "the refused put touched nothing";
    }
    device->deregister_memory(&region_mr);
    env.barrier();
  });
}

TEST(IbvDevice, RemoteAccessErrorFailsOneOperationOnly) {
  (void)run_remote_access_error(sim::seed_from_env(51));
}

// The same seed replays the same run (fibers and wire alike); another
// seed gives another.
TEST(IbvDevice, SameSeedSameRun) {
  const std::uint64_t seed = sim::seed_from_env(53);
  const std::uint64_t first = run_remote_access_error(seed);
  EXPECT_EQ(first, run_remote_access_error(seed)) << sim::replay_command(seed, "");
  bool differs = false;
  for (std::uint64_t other = seed + 1; other < seed + 4 && !differs; ++other) {
    differs = run_remote_access_error(other) != first;
  }
  EXPECT_TRUE(differs);
}

TEST(IbvDevice, UnreachablePeerFailsNamingItsRankAndIsReportedOnce) {
  run_two_ranks(sim::seed_from_env(52), [](sim::rank_env_t& env, ibv_context_t& context) {
    auto device = context.alloc_device({});
    if (env.rank() == 1) {
      device.reset();  // its QPs are gone: rank 1 is unreachable on this device
      env.barrier();
      env.barrier();
      return;
    }
    env.barrier();
    std::vector<net_status_t> statuses;
    post_retrying(env, *device, [&] {
      return device->post_send(1, "lost", 5, net_mr_t{}, 0, reinterpret_cast<void*>(9));
    });
    poll_until(env, *device, &statuses, [&] { return statuses.size() == 2; }, "the failure");
    int reports = 0;
    for (const net_status_t& status : statuses) {
      EXPECT_EQ(status.rank, 1);
      EXPECT_EQ(status.fault, net_fault_t::peer_crashed) << describe_fault(status);
      if (status.opcode == net_opcode_t::peer_down) {
        ++reports;
        EXPECT_EQ(status.user_context, nullptr);
      } else {
        EXPECT_EQ(status.user_context, reinterpret_cast<void*>(9));
      }
    }
    EXPECT_EQ(reports, 1);
    // Later: an operation to rank 1 fails at once, and no second report.
    statuses.clear();
    post_retrying(env, *device, [&] {
      return device->post_send(1, "again", 6, net_mr_t{}, 0, reinterpret_cast<void*>(10));
    });
    poll_until(env, *device, &statuses, [&] { return !statuses.empty(); }, "the second failure");
    for (int i = 0; i < 8; ++i) {
      net_status_t batch[8];
      const std::size_t count = device->poll_comp(batch, 8);
      statuses.insert(statuses.end(), batch, batch + count);
    }
    ASSERT_EQ(statuses.size(), 1u);
    EXPECT_EQ(statuses[0].fault, net_fault_t::peer_crashed);
    EXPECT_EQ(statuses[0].user_context, reinterpret_cast<void*>(10));
    EXPECT_NE(describe_fault(statuses[0]).find("rank 1"), std::string::npos)
        << describe_fault(statuses[0]);
    env.barrier();
  });
}

// Completions with an error are held back until two have come, then
// returned by one poll_cq (when it has room for both): two peers found dead
// in the same poll, as a NIC may report them.
class paired_errors_verbs_t final : public forwarding_verbs_t {
 public:
  using forwarding_verbs_t::forwarding_verbs_t;
  int poll_cq(ibv_cq* cq, int entries_max, ibv_wc* wc) override {
    const int got = forwarding_verbs_t::poll_cq(cq, entries_max, wc);
    if (got < 0 || released_) return got;
    int kept = 0;
    for (int i = 0; i < got; ++i) {
      if (wc[i].status == IBV_WC_SUCCESS) {
        wc[kept++] = wc[i];
      } else {
        held_.push_back(wc[i]);
      }
    }
    if (held_.size() >= 2 && entries_max - kept >= static_cast<int>(held_.size())) {
      for (const ibv_wc& error : held_) wc[kept++] = error;
      held_.clear();
      released_ = true;
    }
    return kept;
  }
  bool released() const { return released_; }

 private:
  std::vector<ibv_wc> held_;
  bool released_ = false;
};

// Two peers found dead by one poll, and the next poll has room for one
// status: each dead peer's report comes in a poll of its own, and no poll
// writes past the statuses it was given.
TEST(IbvDevice, DeadPeersFoundTogetherAreReportedOnePerPollWhenThereIsRoomForOne) {
  emu_options_t emu;
  emu.hcas_count = 3;
  emu.seed = sim::seed_from_env(93);
  emu_fabric_t fabric(emu);
  paired_errors_verbs_t paired(fabric.verbs(0));
  const sim::run_report_t report =
      sim::run_ranks(3, sim::default_run_options(emu.seed), [&](sim::rank_env_t& env) {
        verbs_t& verbs = env.rank() == 0 ? static_cast<verbs_t&>(paired)
                                         : fabric.verbs(env.rank());
        ibv_context_t context(verbs, env.rank(), 3, bootstrap_of(env));
        auto device = context.alloc_device({});
        if (env.rank() != 0) {
          device.reset();  // its QPs are gone: this rank is unreachable on this device
          env.barrier();
          env.barrier();
          return;
        }
        env.barrier();
        for (int peer = 1; peer < 3; ++peer) {
          post_retrying(env, *device, [&] {
            return device->post_send(peer, "lost", 5, net_mr_t{}, 0,
                                     reinterpret_cast<void*>(static_cast<std::uintptr_t>(peer)));
          });
        }
        std::vector<net_status_t> statuses;
        // Room for 8 until both sends' errors came back together (both peers
        // marked dead in that poll), then room for 1 with a guard after it.
        for (int turn = 0; !paired.released(); ++turn) {
          ASSERT_LT(turn, 1'000'000) << "the sends' errors never came";
          net_status_t batch[8];
          const std::size_t count = device->poll_comp(batch, 8);
          statuses.insert(statuses.end(), batch, batch + count);
          env.wait("the sends' errors");
        }
        int reports = 0;
        for (int turn = 0; reports < 2; ++turn) {
          ASSERT_LT(turn, 1'000'000) << "the dead peers' reports never came";
          net_status_t room[2];
          room[1].rank = -77;  // the guard
          const std::size_t count = device->poll_comp(room, 1);
          ASSERT_LE(count, 1u);
          ASSERT_EQ(room[1].rank, -77) << "poll_comp wrote past the one status it was given";
          if (count == 1 && room[0].opcode == net_opcode_t::peer_down) ++reports;
          if (count == 1) statuses.push_back(room[0]);
          env.wait("the dead peers' reports");
        }
        std::vector<int> down(3, 0);
        for (const net_status_t& status : statuses) {
          EXPECT_EQ(status.fault, net_fault_t::peer_crashed) << describe_fault(status);
          if (status.opcode == net_opcode_t::peer_down) ++down[static_cast<std::size_t>(status.rank)];
        }
        EXPECT_EQ(down[1], 1);
        EXPECT_EQ(down[2], 1);
        env.barrier();
      });
  EXPECT_TRUE(report.ok) << report.report << "\n" << fabric.describe();
}

// A verbs table that notes the highest wr_id the device posts to a shared
// receive queue (its notice receives, posted at construction, take the op
// table's last ids) and, once armed, reports the next completion with the id
// just past it: a wr_id the device never gave out.
class forging_verbs_t final : public forwarding_verbs_t {
 public:
  using forwarding_verbs_t::forwarding_verbs_t;
  int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad) override {
    for (const ibv_recv_wr* w = wr; w != nullptr; w = w->next) {
      if (w->wr_id > highest_) highest_ = w->wr_id;
    }
    return forwarding_verbs_t::post_srq_recv(srq, wr, bad);
  }
  int poll_cq(ibv_cq* cq, int entries_max, ibv_wc* wc) override {
    const int got = forwarding_verbs_t::poll_cq(cq, entries_max, wc);
    if (armed_ && got > 0) wc[0].wr_id = highest_ + 1;
    return got;
  }
  void arm() { armed_ = true; }

 private:
  std::uint64_t highest_ = 0;
  bool armed_ = false;
};

// A completion naming a wr_id past the op table (a NIC's or a driver's
// bug) stops the device with an assertion naming it, rather than reading an
// op past the table.
void receive_a_forged_completion() {
  emu_options_t emu;
  emu.hcas_count = 2;
  emu.seed = 97;
  emu_fabric_t fabric(emu);
  forging_verbs_t forging(fabric.verbs(0));
  (void)sim::run_ranks(2, sim::default_run_options(emu.seed), [&](sim::rank_env_t& env) {
    verbs_t& verbs = env.rank() == 0 ? static_cast<verbs_t&>(forging) : fabric.verbs(1);
    ibv_context_t context(verbs, env.rank(), 2, bootstrap_of(env));
    auto device = context.alloc_device({});
    std::vector<char> buffer(64);
    net_mr_t mr;
    post_retrying(env, *device,
                  [&] { return device->register_memory(buffer.data(), buffer.size(), &mr); });
    if (env.rank() == 0) {
      post_retrying(env, *device,
                    [&] { return device->post_recv(buffer.data(), 64, mr, nullptr); });
    }
    env.barrier();
    if (env.rank() == 1) {
      post_retrying(env, *device,
                    [&] { return device->post_send(0, "x", 2, net_mr_t{}, 0, nullptr); });
    } else {
      forging.arm();
    }
    std::vector<net_status_t> statuses;
    poll_until(env, *device, &statuses, [] { return false; }, "the forged completion");
  });
}

TEST(IbvDeviceDeathTest, ACompletionWithAForeignWrIdIsRefused) {
  EXPECT_DEATH(receive_a_forged_completion(), "a completion with a foreign wr_id");
}

// A peer that frees one device goes on using another: its goodbye keeps
// this side's idle twin of the freed device from probing it, so the silence
// of its destroyed QPs is not taken for a crash (peer_down). Long enough
// for the probes to declare it dead otherwise (8 probes timing out, each
// after the QP's transport retries); the busy device's traffic keeps the
// run going meanwhile.
TEST(IbvDevice, PeerThatFreesADeviceIsNotReportedDead) {
  constexpr int round_trips = 3000;
  run_two_ranks(sim::seed_from_env(55), [](sim::rank_env_t& env, ibv_context_t& context) {
    auto idle = context.alloc_device({});  // collective: both ranks allocate both
    auto busy = context.alloc_device({});
    if (env.rank() == 1) idle.reset();
    const int peer = 1 - env.rank();
    char buffer[8] = {};
    net_mr_t mr;
    post_retrying(env, *busy, [&] { return busy->register_memory(buffer, sizeof(buffer), &mr); });
    std::vector<net_status_t> idle_statuses;
    const auto receive = [&] {
      post_retrying(env, *busy, [&] { return busy->post_recv(buffer, sizeof(buffer), mr, nullptr); });
      std::vector<net_status_t> statuses;
      poll_until(env, *busy, &statuses, [&] {
        if (idle != nullptr) {
          net_status_t batch[8];
          const std::size_t count = idle->poll_comp(batch, 8);
          idle_statuses.insert(idle_statuses.end(), batch, batch + count);
        }
        return !statuses.empty();
      }, "the ping");
      ASSERT_EQ(statuses[0].opcode, net_opcode_t::recv) << describe_fault(statuses[0]);
    };
    const auto send = [&] {
      post_retrying(env, *busy, [&] { return busy->post_sends(peer, "ping", 5, 0); });
    };
    for (int trip = 0; trip < round_trips; ++trip) {
      if (env.rank() == 0) {
        send();
        receive();
      } else {
        receive();
        send();
      }
    }
    EXPECT_TRUE(idle_statuses.empty())
        << "the idle device reported " << idle_statuses.size() << ", the first "
        << describe_fault(idle_statuses.front());
    env.barrier();
    busy->deregister_memory(&mr);
  });
}

// Each thread-domain strategy: the QPs sit on parent domains of as many
// thread domains as it says, and traffic flows over them (the MRs are
// registered on the PD the parent domains share).
TEST(IbvDevice, ThreadDomainStrategies) {
  struct expectation_t {
    backend::net_ibv_td_t strategy;
    std::size_t tds;
  };
  // Two ranks, two QPs per rank: 4 QPs per device.
  for (const expectation_t expected : {expectation_t{backend::net_ibv_td_t::none, 0},
                                       expectation_t{backend::net_ibv_td_t::all_qp, 1},
                                       expectation_t{backend::net_ibv_td_t::per_qp, 4}}) {
    run_two_ranks(
        sim::seed_from_env(54),
        [&expected](sim::rank_env_t& env, ibv_context_t& context) {
          backend::net_device_attr_t requested;
          requested.ibv.td = expected.strategy;
          auto owned = context.alloc_device(requested);
          auto* device = static_cast<ibv_device_t*>(owned.get());
          EXPECT_EQ(device->thread_domains_count(), expected.tds);
          std::vector<char> region(64, 0);
          net_mr_t mr;
          post_retrying(env, *device, [&] { return device->register_memory(region.data(), 64, &mr); });
          const net_rmr_t mine = device->get_rmr(mr);
          net_rmr_t rmrs[2];
          env.allgather(&mine, sizeof(mine), rmrs);
          const int peer = 1 - env.rank();
          post_retrying(env, *device, [&] {
            return device->post_putImms(peer, "td", 3, static_cast<std::uint64_t>(env.rank()) * 8,
                                        rmrs[peer], 40 + env.rank());
          });
          std::vector<net_status_t> statuses;
          poll_until(env, *device, &statuses, [&] { return !statuses.empty(); }, "the putImm");
          EXPECT_EQ(statuses[0].opcode, net_opcode_t::remote_write);
          EXPECT_EQ(statuses[0].imm_data, 40u + peer);
          EXPECT_STREQ(region.data() + peer * 8, "td");
          env.barrier();
          device->deregister_memory(&mr);
        });
  }
}

// An HCA out of SRQs refuses a device halfway through its construction
// (PD, CQ and the first SRQ made): alloc_device throws naming the verb, the
// objects already made are destroyed (the context still closes at the end
// of the rank, which asserts that no device of it is open), and once the
// first device is freed a new one fits again.
TEST(IbvDevice, ARefusedDeviceLeavesNothingBehind) {
  emu_options_t emu;
  emu.max_srq = 3;  // one device takes two (the caller's and the notices')
  run_two_ranks(
      1,
      [](sim::rank_env_t&, ibv_context_t& context) {
        std::unique_ptr<backend::net_device_t> first = context.alloc_device({});
        try {
          (void)context.alloc_device({});
          ADD_FAILURE() << "a second device fit in 3 SRQs";
        } catch (const std::runtime_error& error) {
          EXPECT_NE(std::string(error.what()).find("create_srq"), std::string::npos)
              << error.what();
        }
        first.reset();
        EXPECT_NE(context.alloc_device({}), nullptr);
      },
      {}, emu);
}

// Devices exchange their QP numbers in allgather rounds of 8 peers
// (ibv_device_t::connect_peers): with 9 ranks rank 8's column comes in the
// second round. Every rank then sends to every other one; each message
// arrives once, on the QP of the rank that sent it.
TEST(IbvDevice, NineRanksConnectAcrossTwoRounds) {
  constexpr int ranks = 9;
  emu_options_t emu;
  emu.hcas_count = ranks;
  emu.seed = sim::seed_from_env(91);
  emu_fabric_t fabric(emu);
  const sim::run_report_t report =
      sim::run_ranks(ranks, sim::default_run_options(emu.seed), [&](sim::rank_env_t& env) {
        ibv_context_t context(fabric.verbs(env.rank()), env.rank(), ranks, bootstrap_of(env));
        auto device = context.alloc_device({});
        constexpr std::size_t slot = 16;
        std::vector<char> inbox(slot * (ranks - 1));
        net_mr_t mr;
        post_retrying(env, *device,
                      [&] { return device->register_memory(inbox.data(), inbox.size(), &mr); });
        for (int i = 0; i < ranks - 1; ++i) {
          post_retrying(env, *device, [&] {
            return device->post_recv(inbox.data() + i * slot, slot, mr, nullptr);
          });
        }
        env.barrier();  // every receive is posted before any send
        const std::string text = "from " + std::to_string(env.rank());
        for (int peer = 0; peer < ranks; ++peer) {
          if (peer == env.rank()) continue;
          post_retrying(env, *device, [&] {
            return device->post_send(peer, text.c_str(), text.size() + 1, net_mr_t{},
                                     static_cast<backend::net_imm_data_t>(env.rank()),
                                     reinterpret_cast<void*>(static_cast<std::uintptr_t>(peer + 1)));
          });
        }
        std::vector<net_status_t> statuses;
        poll_until(env, *device, &statuses,
                   [&] { return statuses.size() == 2 * (ranks - 1); }, "every message both ways");
        std::vector<int> heard(ranks, 0);
        for (const net_status_t& status : statuses) {
          EXPECT_EQ(status.fault, net_fault_t::none);
          if (status.opcode != net_opcode_t::recv) continue;
          const int source = static_cast<int>(status.imm_data);
          ASSERT_TRUE(source >= 0 && source < ranks && source != env.rank()) << source;
          EXPECT_EQ(status.rank, source) << "a message arrived on another rank's QP";
          EXPECT_STREQ(static_cast<const char*>(status.buffer),
                       ("from " + std::to_string(source)).c_str());
          ++heard[static_cast<std::size_t>(source)];
        }
        for (int peer = 0; peer < ranks; ++peer) {
          EXPECT_EQ(heard[static_cast<std::size_t>(peer)], peer == env.rank() ? 0 : 1)
              << "messages from rank " << peer;
        }
        env.barrier();
        device->deregister_memory(&mr);
        env.barrier();
      });
  EXPECT_TRUE(report.ok) << report.report << "\n" << fabric.describe();
}

// Opening a one-rank context over `verbs` with `options` fails with a
// std::runtime_error whose message has `fragment`.
void expect_open_refused(verbs_t& verbs, const ibv_context_options_t& options,
                         const std::string& fragment) {
  ibv_bootstrap_t bootstrap{[](const void*, std::size_t, void*) {}, [](const char*) {}};
  try {
    ibv_context_t context(verbs, 0, 1, bootstrap, options);
    ADD_FAILURE() << "a context opened; expected a refusal naming \"" << fragment << "\"";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find(fragment), std::string::npos) << error.what();
  }
}

TEST(IbvContext, NoDeviceIsAClearError) {
  // A verbs table whose device list is empty, as libibverbs' on a machine
  // without RDMA: the context refuses with a message, never a crash.
  emu_options_t emu;
  emu_fabric_t fabric(emu);
  class empty_list_t final : public forwarding_verbs_t {
   public:
    using forwarding_verbs_t::forwarding_verbs_t;
    const char* get_name() const override { return "empty"; }
    ibv_device** get_device_list(int* count) override {
      *count = 0;
      return list_;
    }
    void free_device_list(ibv_device**) override {}

   private:
    ibv_device* list_[1] = {nullptr};
  } empty(fabric.verbs(0));
  expect_open_refused(empty, {}, "no RDMA device");
}

// A rank outside [0, ranks_count) is refused before any device is opened,
// naming the rank and the range; the last rank in it opens.
TEST(IbvContext, RankOutsideTheJobIsRefused) {
  emu_options_t emu;
  emu_fabric_t fabric(emu);
  ibv_bootstrap_t bootstrap{[](const void*, std::size_t, void*) {}, [](const char*) {}};
  for (int rank : {-1, 1, 2}) {
    try {
      ibv_context_t context(fabric.verbs(0), rank, 1, bootstrap);
      ADD_FAILURE() << "a context opened as rank " << rank << " of 1";
    } catch (const std::invalid_argument& error) {
      const std::string expected = "rank " + std::to_string(rank) + " outside [0, 1)";
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
    }
  }
  ibv_context_t context(fabric.verbs(0), 0, 1, bootstrap);
  EXPECT_EQ(context.port_num(), 1);
}

// A device name that no device has is refused naming it: every listed
// device is compared, and nothing past the list.
TEST(IbvContext, UnknownDeviceNameIsAClearError) {
  emu_options_t emu;
  emu_fabric_t fabric(emu);
  expect_open_refused(fabric.verbs(0), parse_device_name("nosuch0"),
                      "no RDMA device named 'nosuch0'");
}

// LCI_ATTR_DEVICE_NAME picks the device and, after a colon, its port.
TEST(IbvContext, DeviceNameSelectsDeviceAndPort) {
  EXPECT_EQ(parse_device_name("mlx5_0").device_name, "mlx5_0");
  EXPECT_EQ(parse_device_name("mlx5_0").port_num, 1);
  EXPECT_EQ(parse_device_name("mlx5_0:2").device_name, "mlx5_0");
  EXPECT_EQ(parse_device_name("mlx5_0:2").port_num, 2);
  EXPECT_EQ(parse_device_name(":3").device_name, "");
  EXPECT_EQ(parse_device_name(":3").port_num, 3);
  EXPECT_EQ(parse_device_name("").device_name, "");
  for (const char* bad : {"mlx5_0:", "mlx5_0:0", "mlx5_0:256", "mlx5_0:x", "mlx5_0:-1"}) {
    EXPECT_THROW(parse_device_name(bad), std::invalid_argument) << bad;
  }
  // The port reaches the device: an emulated HCA has port 1 only, so port 2
  // is refused when the context queries it, naming the query.
  emu_options_t emu;
  emu_fabric_t fabric(emu);
  expect_open_refused(fabric.verbs(0), parse_device_name(":2"), "query_port");
  ibv_bootstrap_t bootstrap{[](const void*, std::size_t, void*) {}, [](const char*) {}};
  ibv_context_t context(fabric.verbs(0), 0, 1, bootstrap, parse_device_name(":1"));
  EXPECT_EQ(context.port_num(), 1);
}

}  // namespace
}  // namespace lci::backend::ibv
