// The ibv device's try-locks (backends/ibv/ibv_device.hpp, "Thread
// safety"): one per QP (per_qp) or one for all QPs (none, all_qp), one on
// the CQ, one on the SRQ; a busy one is retry_lock (or 0 completions),
// never a wait.
//   - Held locks, exactly: a verbs table whose post_send, post_srq_recv or
//     poll_cq waits at a gate keeps one thread inside the device with that
//     queue's lock held, while the test thread checks which other calls go
//     through and which are refused.
//   - Many threads: two ranks (OS threads, concurrent mode) of four threads
//     each share one device and send, write with immediate, receive and
//     poll at once; every message arrives exactly once. Meant for
//     --config=tsan as well.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ibv/ibv_context.hpp"
#include "backends/ibv/ibv_device.hpp"
#include "backends/ibv_emu/ibv_emu_fabric.hpp"
#include "lci/util/atomic.hpp"
#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "tests/backends/ibv/ibv_device_test_util.hpp"
#include "tests/backends/ibv/ibv_forwarding_verbs.hpp"

namespace lci::backend::ibv {
namespace {

using backend::net_device_attr_t;
using backend::net_ibv_td_t;
using ibv_emu::emu_fabric_t;
using ibv_emu::emu_options_t;

const char* td_name(net_ibv_td_t td) {
  switch (td) {
    case net_ibv_td_t::none: return "none";
    case net_ibv_td_t::all_qp: return "all_qp";
    case net_ibv_td_t::per_qp: return "per_qp";
  }
  return "?";
}

// ---- held locks ----

enum class gate_t { none, post_send, post_srq_recv, poll_cq };

// Once armed, the next call of the gated verb waits inside until released
// (seq_cst throughout: a test handshake, not a data path).
class gated_verbs_t final : public forwarding_verbs_t {
 public:
  using forwarding_verbs_t::forwarding_verbs_t;

  void arm(gate_t gate) {
    inside_.store(false, util::mo_seq_cst);
    released_.store(false, util::mo_seq_cst);
    armed_.store(gate, util::mo_seq_cst);
  }
  void wait_until_inside() const {
    while (!inside_.load(util::mo_seq_cst)) std::this_thread::yield();
  }
  void release() { released_.store(true, util::mo_seq_cst); }

  int post_send(ibv_qp* q, ibv_send_wr* w, ibv_send_wr** b) override {
    pass(gate_t::post_send);
    return forwarding_verbs_t::post_send(q, w, b);
  }
  int post_srq_recv(ibv_srq* s, ibv_recv_wr* w, ibv_recv_wr** b) override {
    pass(gate_t::post_srq_recv);
    return forwarding_verbs_t::post_srq_recv(s, w, b);
  }
  int poll_cq(ibv_cq* q, int n, ibv_wc* w) override {
    pass(gate_t::poll_cq);
    return forwarding_verbs_t::poll_cq(q, n, w);
  }

 private:
  void pass(gate_t at) {
    gate_t expected = at;
    if (!armed_.compare_exchange_strong(expected, gate_t::none, util::mo_seq_cst,
                                        util::mo_seq_cst)) {
      return;  // not armed for this verb (or another call took the gate)
    }
    inside_.store(true, util::mo_seq_cst);
    while (!released_.load(util::mo_seq_cst)) std::this_thread::yield();
  }

  util::atomic<gate_t> armed_{gate_t::none};
  util::atomic<bool> inside_{false};
  util::atomic<bool> released_{false};
};

// One rank alone (its device's QPs connect to itself: a message QP and an
// RMA QP) over a gated table of a one-HCA fabric.
struct lone_rank_t {
  emu_fabric_t fabric{[] {
    emu_options_t emu;
    emu.hcas_count = 1;
    emu.seed = 1;
    return emu;
  }()};
  gated_verbs_t verbs{fabric.verbs(0)};
  ibv_context_t context{verbs, 0, 1,
                        ibv_bootstrap_t{[](const void* mine, std::size_t bytes, void* all) {
                                          std::memcpy(all, mine, bytes);
                                        },
                                        [](const char*) {}}};
  std::unique_ptr<backend::net_device_t> device;
  std::vector<char> region = std::vector<char>(64, 0);
  net_mr_t region_mr;
  net_rmr_t rmr;

  explicit lone_rank_t(net_ibv_td_t td) {
    net_device_attr_t requested;
    requested.ibv.td = td;
    device = context.alloc_device(requested);
    EXPECT_TRUE(device->register_memory(region.data(), region.size(), &region_mr).is_done());
    rmr = device->get_rmr(region_mr);
  }
  ~lone_rank_t() {
    drain_completions();
    device->deregister_memory(&region_mr);
  }
  void drain_completions() {
    net_status_t statuses[8];
    for (int turn = 0; turn < 1000; ++turn) {
      (void)fabric.drain();
      if (device->poll_comp(statuses, 8) == 0 && fabric.in_flight_count() == 0) return;
    }
  }
  // holder() runs on a thread of its own and stops inside `gate`, its lock
  // held; checks() runs meanwhile on this thread; then the holder goes on.
  void while_held(gate_t gate, const std::function<void()>& holder,
                  const std::function<void()>& checks) {
    verbs.arm(gate);
    std::thread thread(holder);
    verbs.wait_until_inside();
    checks();
    verbs.release();
    thread.join();
  }
};

// A post waiting inside post_send holds its QP's lock: another post to that
// QP is retry_lock, one to the other QP goes through only under per_qp, and
// receives and polls go through.
TEST(IbvLocks, ABusyQpLockRefusesOnlyItsQps) {
  for (const net_ibv_td_t td : {net_ibv_td_t::none, net_ibv_td_t::all_qp, net_ibv_td_t::per_qp}) {
    SCOPED_TRACE(td_name(td));
    std::vector<char> buffer(64);  // outlives the rank: a message may land in it at its end
    lone_rank_t rank(td);
    error_t held = errorcode_t::retry_lock;
    rank.while_held(
        gate_t::post_send, [&] { held = rank.device->post_sends(0, "held", 5, 1); },
        [&] {
          EXPECT_EQ(rank.device->post_sends(0, "same", 5, 2).get_str(),
                    error_t(errorcode_t::retry_lock).get_str())
              << "a post to the QP whose lock is held";
          const error_t other = rank.device->post_puts(0, "other", 6, 8, rank.rmr);
          if (td == net_ibv_td_t::per_qp) {
            EXPECT_TRUE(other.is_done()) << "a put on the other QP: " << other.get_str();
          } else {
            EXPECT_EQ(other.get_str(), error_t(errorcode_t::retry_lock).get_str())
                << "a put on the other QP, which shares the lock";
          }
          const error_t recv = rank.device->post_recv(buffer.data(), 64, net_mr_t{}, nullptr);
          EXPECT_TRUE(recv.is_done()) << recv.get_str();
          net_status_t statuses[4];
          (void)rank.device->poll_comp(statuses, 4);  // returns: the CQ lock is free
        });
    EXPECT_TRUE(held.is_done()) << held.get_str();
  }
}

// A poll waiting inside poll_cq holds the CQ lock: another poll returns 0
// completions at once although the CQ holds some; posts go through.
TEST(IbvLocks, ABusyCqLockIsNoCompletions) {
  std::vector<char> buffer(64);  // outlives the rank
  lone_rank_t rank(net_ibv_td_t::per_qp);
  ASSERT_TRUE(rank.device->post_recv(buffer.data(), 64, net_mr_t{}, nullptr).is_done());
  ASSERT_TRUE(rank.device->post_send(0, "ready", 6, net_mr_t{}, 3, nullptr).is_posted());
  ASSERT_TRUE(rank.fabric.drain());  // both completions wait in the CQ
  std::size_t held_count = 0;
  net_status_t held_statuses[4];
  rank.while_held(
      gate_t::poll_cq, [&] { held_count = rank.device->poll_comp(held_statuses, 4); },
      [&] {
        net_status_t statuses[4];
        EXPECT_EQ(rank.device->poll_comp(statuses, 4), 0u) << "a poll while the CQ lock is held";
        EXPECT_TRUE(rank.device->post_sends(0, "post", 5, 4).is_done());
        EXPECT_TRUE(rank.device->post_recv(buffer.data(), 64, net_mr_t{}, nullptr).is_done());
      });
  EXPECT_EQ(held_count, 2u) << "the holder's poll takes both completions";
}

// A receive waiting inside post_srq_recv holds the SRQ lock: another
// receive is retry_lock; posts and polls go through.
TEST(IbvLocks, ABusySrqLockRefusesOnlyReceives) {
  std::vector<char> first(64), second(64);  // outlive the rank
  lone_rank_t rank(net_ibv_td_t::none);
  error_t held = errorcode_t::retry_lock;
  rank.while_held(
      gate_t::post_srq_recv,
      [&] { held = rank.device->post_recv(first.data(), 64, net_mr_t{}, nullptr); },
      [&] {
        EXPECT_EQ(rank.device->post_recv(second.data(), 64, net_mr_t{}, nullptr).get_str(),
                  error_t(errorcode_t::retry_lock).get_str());
        EXPECT_TRUE(rank.device->post_sends(0, "send", 5, 5).is_done());
        net_status_t statuses[4];
        (void)rank.device->poll_comp(statuses, 4);
      });
  EXPECT_TRUE(held.is_done()) << held.get_str();
}

// ---- many threads ----

constexpr int threads_count = 4;
constexpr int receive_buffers_count = 32;

#if defined(__SANITIZE_THREAD__)
constexpr int messages_per_thread = 40;
#else
constexpr int messages_per_thread = 200;
#endif
constexpr int messages_per_rank = threads_count * messages_per_thread;

// What a rank's threads share.
struct rank_tally_t {
  util::atomic<int> seen[messages_per_rank];   // sends received, by imm_data
  util::atomic<int> written{0};                // remote writes with immediate
  util::atomic<int> received{0};
};

void run_many_threads(net_ibv_td_t td, std::uint64_t seed) {
  emu_options_t emu;
  emu.hcas_count = 2;
  emu.seed = seed;
  emu.max_qp_wr = 256;
  emu_fabric_t fabric(emu);
  rank_tally_t tallies[2];
  util::atomic<int> ranks_done{0};  // ranks that got everything: the others stop polling then
  sim::run_options_t options = sim::default_run_options(seed, sim::world_mode_t::concurrent);
  const sim::run_report_t report = sim::run_ranks(2, options, [&](sim::rank_env_t& env) {
    ibv_context_t context(fabric.verbs(env.rank()), env.rank(), env.ranks_count(),
                          bootstrap_of(env));
    net_device_attr_t requested;
    requested.ibv.td = td;
    requested.net_max_sends = 128;
    requested.net_max_recvs = receive_buffers_count;
    auto device = context.alloc_device(requested);
    std::vector<char> region(threads_count * 8, 0);
    net_mr_t region_mr;
    post_retrying(env, *device,
                  [&] { return device->register_memory(region.data(), region.size(), &region_mr); });
    const net_rmr_t mine = device->get_rmr(region_mr);
    net_rmr_t rmrs[2];
    env.allgather(&mine, sizeof(mine), rmrs);
    std::vector<std::uint64_t> buffers(receive_buffers_count);
    for (int i = 0; i < receive_buffers_count; ++i) {
      post_retrying(env, *device, [&] {
        return device->post_recv(&buffers[i], 8, net_mr_t{}, reinterpret_cast<void*>(i + 1));
      });
    }
    rank_tally_t& tally = tallies[env.rank()];
    const int peer = 1 - env.rank();
    bool marked_done = false;  // by thread 0 only
    env.run_threads(threads_count, [&](int thread) {
      // One poll: tallies what arrived and posts its buffers again.
      auto poll = [&] {
        net_status_t statuses[8];
        const std::size_t count = device->poll_comp(statuses, 8);
        for (std::size_t i = 0; i < count; ++i) {
          const net_status_t& status = statuses[i];
          ASSERT_EQ(status.fault, backend::net_fault_t::none) << describe_fault(status);
          if (status.opcode == net_opcode_t::remote_write) {
            tally.written.fetch_add(1, util::mo_seq_cst);
          } else if (status.opcode == net_opcode_t::recv) {
            ASSERT_LT(status.imm_data, static_cast<std::uint32_t>(messages_per_rank));
            tally.seen[status.imm_data].fetch_add(1, util::mo_seq_cst);
            tally.received.fetch_add(1, util::mo_seq_cst);
            // The buffer goes back at once (the SRQ lock's holder may be
            // off the CPU for a while on a loaded machine).
            for (int tries = 0;; ++tries) {
              ASSERT_LT(tries, 10'000'000) << "a receive never went back";
              if (!device->post_recv(status.buffer, 8, net_mr_t{}, status.user_context)
                       .is_retry()) {
                break;
              }
              std::this_thread::yield();
            }
          }
        }
      };
      for (int i = 0; i < messages_per_thread; ++i) {
        const auto imm = static_cast<std::uint32_t>(thread * messages_per_thread + i);
        for (int tries = 0; device->post_sends(peer, &imm, sizeof(imm), imm).is_retry(); ++tries) {
          ASSERT_LT(tries, 10'000'000) << "a send never went out";
          poll();
        }
        for (int tries = 0;
             device->post_putImms(peer, &imm, sizeof(imm), static_cast<std::uint64_t>(thread) * 8,
                                  rmrs[peer], imm)
                 .is_retry();
             ++tries) {
          ASSERT_LT(tries, 10'000'000) << "a write never went out";
          poll();
        }
      }
      for (int turn = 0; ranks_done.load(util::mo_seq_cst) < 2; ++turn) {
        ASSERT_LT(turn, 50'000'000) << "rank " << env.rank() << " waited too long: received "
                                    << tally.received.load(util::mo_seq_cst) << ", written "
                                    << tally.written.load(util::mo_seq_cst);
        poll();
        if (thread == 0 && !marked_done &&
            tally.received.load(util::mo_seq_cst) == messages_per_rank &&
            tally.written.load(util::mo_seq_cst) == messages_per_rank) {
          marked_done = true;
          ranks_done.fetch_add(1, util::mo_seq_cst);
        }
        std::this_thread::yield();
      }
    });
    for (int imm = 0; imm < messages_per_rank; ++imm) {
      EXPECT_EQ(tally.seen[imm].load(util::mo_seq_cst), 1) << "message " << imm;
    }
    env.barrier();
    device->deregister_memory(&region_mr);
  });
  EXPECT_TRUE(report.ok) << report.report << "\n" << fabric.describe();
}

TEST(IbvLocks, ThreadsShareOneDevice) {
  for (const net_ibv_td_t td : {net_ibv_td_t::none, net_ibv_td_t::all_qp, net_ibv_td_t::per_qp}) {
    SCOPED_TRACE(td_name(td));
    run_many_threads(td, sim::seed_from_env(81));
  }
}

}  // namespace
}  // namespace lci::backend::ibv
