// A rank crashes (rank_env_t::crash) while a peer waits on an operation that
// involves it: the peer's progress() throws an error naming the dead rank,
// the operation's completion object hears "fatal" (nothing waits forever),
// and the peer's runtime keeps working with the ranks still alive.
#include <gtest/gtest.h>

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

// Keeps posting at the victim and waiting for each operation until one
// fails (the victim dies at a moment of the scheduler's choosing; the
// harness bounds the run); returns what progress() threw. The failed
// operation's synchronizer must then hold its fatal status.
std::string watch_victim(lci::sim::rank_env_t& env, op_kind_t kind, std::size_t size,
                         lci::rmr_t rmr) {
  std::vector<char> buffer(size, 'w');
  for (int attempt = 0;; ++attempt) {
    lci::comp_t sync = lci::alloc_sync();
    try {
      lci::status_t status =
          post_retrying([&] { return post_at_victim(kind, buffer, size, sync, rmr, attempt); });
      if (status.is_posted()) lci::sync_wait(sync, &status);
    } catch (const std::runtime_error& error) {
      lci::status_t fatal;
      require(lci::sync_test(sync, &fatal), std::string(get_op_str(kind)) +
                                                " to a dead rank: its completion object never "
                                                "heard of it (" + error.what() + ")");
      require(fatal.error.errorcode == lci::errorcode_t::fatal,
              std::string("the failed operation's status is ") + fatal.error.get_str());
      require(fatal.rank == victim_rank, "the failed operation's status names rank " +
                                             std::to_string(fatal.rank));
      lci::free_comp(&sync);
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
  if (env.rank() == 0) {
    const std::string error = watch_victim(env, kind, size, rmrs[victim_rank]);
    require(error.find("rank " + std::to_string(victim_rank)) != std::string::npos,
            "the error does not name the dead rank: " + error);
  }
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

// A zero-copy send to a dead rank: its rendezvous RTS goes out as an
// inject, whose failure comes back without a request, so progress() throws
// but the send's completion object never hears of it, and the send's
// request and registration leak. Disabled: the runtime does not yet tie an
// RTS's failure to its send.
TEST(RankCrashKnownBug, DISABLED_ZeroCopySendToDeadRankCompletes) {
  lci::sim::sweep_t sweep;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(3, sweep, [](lci::sim::rank_env_t& env) {
    crash_body(env, op_kind_t::send, std::size_t{64} << 10);
  });
}

}  // namespace
