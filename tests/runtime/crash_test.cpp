// A rank crashes (rank_env_t::crash) while a peer waits on an operation that
// involves it: the peer's progress() throws an error naming the dead rank
// (once: every live rank hears of the crash, through the network's own
// report), the operation's completion object hears "fatal" (nothing waits
// forever), posts naming the dead rank are refused, and the runtime keeps
// working with the ranks still alive.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;
using lci::runtime_test::round_trip;

constexpr int victim_rank = 1;

enum class op_kind_t { send, put, get };

const char* get_op_str(op_kind_t kind) {
  switch (kind) {
    case op_kind_t::send: return "send";
    case op_kind_t::put: return "put";
    case op_kind_t::get: return "get";
  }
  return "?";
}

// Posts one operation at the victim; network semantic, so its completion
// is the network's word that it reached the target.
lci::status_t post_at_victim(op_kind_t kind, std::vector<char>& buffer, std::size_t size,
                             lci::comp_t comp, lci::rmr_t rmr, int attempt) {
  switch (kind) {
    case op_kind_t::send:
      return lci::post_send_x(victim_rank, buffer.data(), size, static_cast<lci::tag_t>(attempt),
                              comp)
          .comp_semantic(lci::comp_semantic_t::network)();
    case op_kind_t::put:
      return lci::post_put_x(victim_rank, buffer.data(), size, comp, 0, rmr)
          .comp_semantic(lci::comp_semantic_t::network)();
    case op_kind_t::get:
      break;
  }
  return lci::post_get(victim_rank, buffer.data(), size, comp, 0, rmr);
}

// Progresses until progress() throws the error naming the dead rank (once
// per runtime: the network reports every dead peer on its own), as
// upstream's peer_failure_error; returns its message.
std::string await_crash_error() {
  for (;;) {
    try {
      (void)lci::progress();
    } catch (const lci::peer_failure_error& error) {
      require(error.failed_rank() == victim_rank,
              "peer_failure_error names rank " + std::to_string(error.failed_rank()));
      return error.what();
    }
  }
}

// After the crash is known: posts to and from the dead rank are refused.
void require_refused(const std::function<lci::status_t()>& post, const char* what) {
  try {
    (void)post();
  } catch (const lci::peer_failure_error& error) {
    require(error.failed_rank() == victim_rank,
            "peer_failure_error names rank " + std::to_string(error.failed_rank()));
    require(std::string(error.what()).find("rank " + std::to_string(victim_rank) + " crashed") !=
                std::string::npos,
            std::string(what) + ": refused with another error: " + error.what());
    return;
  }
  require(false, std::string(what) + " to a dead rank was accepted");
}

// Keeps posting at the victim and waiting for each operation until the
// crash shows (the victim dies at a moment of the scheduler's choosing; the
// harness bounds the run); returns what was thrown. An operation in flight
// then still completes: fatal naming the victim, or done when it finished
// before the crash. Later posts to the victim are refused.
std::string watch_victim(lci::sim::rank_env_t& env, op_kind_t kind, std::size_t size,
                         lci::rmr_t rmr) {
  std::vector<char> buffer(size, 'w');
  for (int attempt = 0;; ++attempt) {
    lci::comp_t sync = lci::alloc_sync();
    bool posted = false;
    try {
      lci::status_t status = post_retrying([&] {
        lci::status_t s = post_at_victim(kind, buffer, size, sync, rmr, attempt);
        posted = s.is_posted();
        return s;
      });
      if (status.is_posted()) lci::sync_wait(sync, &status);
    } catch (const std::runtime_error& error) {
      if (posted) {
        lci::status_t last;
        while (!lci::sync_test(sync, &last)) (void)lci::progress();  // not thrown again
        require(last.error.errorcode == lci::errorcode_t::fatal || last.error.is_done(),
                std::string("the operation in flight ended ") + last.error.get_str());
        if (last.error.errorcode == lci::errorcode_t::fatal) {
          require(last.rank == victim_rank, "the failed operation's status names rank " +
                                                std::to_string(last.rank));
        }
      }
      lci::free_comp(&sync);
      require_refused([&] { return post_at_victim(kind, buffer, size, lci::COMP_NULL_RETRY,
                                                  rmr, attempt); },
                      get_op_str(kind));
      return error.what();
    }
    lci::free_comp(&sync);
    env.wait("the victim's crash");
  }
}

void crash_body(lci::sim::rank_env_t& env, op_kind_t kind, std::size_t size) {
  lci::g_runtime_init();
  std::vector<char> window(size, 'v');
  lci::mr_t mr = lci::register_memory(window.data(), window.size());
  const lci::rmr_t mine = lci::get_rmr(mr);
  lci::rmr_t rmrs[3];
  env.allgather(&mine, sizeof(mine), rmrs);
  if (env.rank() == victim_rank) env.crash();  // with its runtime, window and all
  const std::string error = env.rank() == 0 ? watch_victim(env, kind, size, rmrs[victim_rank])
                                            : await_crash_error();
  require(error.find("rank " + std::to_string(victim_rank)) != std::string::npos,
          "the error does not name the dead rank: " + error);
  round_trip(2 - env.rank(), 7);  // rank 0 and rank 2: the runtime still works
  env.barrier();  // the live ranks
  lci::deregister_memory(&mr);
  lci::g_runtime_fina();
}

// Sizes: one an inject would carry (the network semantic must not take
// that path: it completes before the data lands), one through a packet.
using crash_param_t = std::tuple<op_kind_t, std::size_t>;

class RankCrash : public ::testing::TestWithParam<crash_param_t> {};

TEST_P(RankCrash, PeerSeesAnErrorNamingTheDeadRank) {
  LCI_SIM_ONLY("crashes a rank with rank_env_t::crash");
  const op_kind_t kind = std::get<0>(GetParam());
  const std::size_t size = std::get<1>(GetParam());
  lci::sim::sweep_t sweep;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  const std::vector<lci::sim::run_report_t> reports = lci::sim::expect_runs_ok(
      3, sweep, [kind, size](lci::sim::rank_env_t& env) { crash_body(env, kind, size); });
  for (const auto& report : reports) EXPECT_EQ(report.crashed_ranks, std::vector<int>{victim_rank});
}

INSTANTIATE_TEST_SUITE_P(
    EachOperation, RankCrash,
    ::testing::Combine(::testing::Values(op_kind_t::send, op_kind_t::put, op_kind_t::get),
                       ::testing::Values(std::size_t{8}, std::size_t{1024})),
    [](const ::testing::TestParamInfo<crash_param_t>& info) {
      return std::string(get_op_str(std::get<0>(info.param))) + "_" +
             std::to_string(std::get<1>(info.param)) + "_bytes";
    });

// A zero-copy send to a dead rank: its rendezvous RTS goes out as an inject,
// whose failure comes back without a request; the runtime's record of sends
// waiting for an RTR fails it (or the network's peer report does).
TEST(RankCrash, ZeroCopySendToDeadRankCompletes) {
  LCI_SIM_ONLY("crashes a rank with rank_env_t::crash");
  lci::sim::sweep_t sweep;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(3, sweep, [](lci::sim::rank_env_t& env) {
    crash_body(env, op_kind_t::send, std::size_t{64} << 10);
  });
}

// Receives posted for a rank that crashes later, with no message ever sent
// to it: each completes fatal naming the dead rank before progress() throws
// (the network's own report), and later posts naming it are refused. Sizes
// below and above the packet size (the receiver cannot tell which protocol
// the sender would have used). Every other receive is posted through a
// second device that nobody progresses: the crash reported on the default
// device fails the receives waiting on any device.
TEST(RankCrash, ReceiveFromDeadRankCompletes) {
  LCI_SIM_ONLY("crashes a rank with rank_env_t::crash");
  lci::sim::sweep_t sweep;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(3, sweep, [](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    lci::device_t idle_device = lci::alloc_device();  // collective: every rank
    constexpr int receives_count = 4;
    std::vector<char> buffer(std::size_t{64} << 10);
    lci::comp_t syncs[receives_count];
    if (env.rank() == 0) {
      for (int i = 0; i < receives_count; ++i) {
        syncs[i] = lci::alloc_sync();
        const std::size_t size = i == 0 ? 16 : buffer.size();
        const lci::device_t device = i % 2 == 0 ? lci::get_default_device() : idle_device;
        const lci::status_t status = post_retrying([&] {
          return lci::post_recv_x(victim_rank, buffer.data(), size, i, syncs[i]).device(device)();
        }, device);
        require(status.is_posted(), "a receive from the victim did not wait");
      }
    }
    env.barrier();
    if (env.rank() == victim_rank) env.crash();
    const std::string error = await_crash_error();
    require(error.find("rank " + std::to_string(victim_rank)) != std::string::npos,
            "the error does not name the dead rank: " + error);
    if (env.rank() == 0) {
      for (int i = 0; i < receives_count; ++i) {
        lci::status_t status;
        require(lci::sync_test(syncs[i], &status), "a receive from the dead rank still waits");
        require(status.error.errorcode == lci::errorcode_t::fatal,
                std::string("the receive's status is ") + status.error.get_str());
        require(status.rank == victim_rank && status.tag == static_cast<lci::tag_t>(i),
                "the receive's status names rank " + std::to_string(status.rank));
        lci::free_comp(&syncs[i]);
      }
      require_refused([&] { return lci::post_recv(victim_rank, buffer.data(), 8, 9, lci::COMP_NULL_RETRY); },
                      "a receive");
    } else {
      // Rank 2 never talked to the victim; it learned all the same.
      require_refused([&] { return lci::post_send(victim_rank, buffer.data(), 8, 9, lci::COMP_NULL_RETRY); },
                      "a send");
    }
    round_trip(2 - env.rank(), 7);
    env.barrier();
    lci::free_device(&idle_device);
    lci::g_runtime_fina();
  });
}

}  // namespace
