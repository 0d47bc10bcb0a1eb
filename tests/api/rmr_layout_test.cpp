// rmr_t has upstream's layout (base, mr_base, opaque_rkey: 24 bytes), and
// programs ship it raw between processes: Reconverse packs one, with an
// 8-byte handle of its own, into a fixed 32-byte field of its messages.
// Here rank 1 sends its window's rmr_t so packed; rank 0 unpacks it, puts
// into the window (with a remote completion), gets the bytes back, and an
// access one byte past the window fails at the target alone.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_process.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

static_assert(sizeof(lci::rmr_t) == 24, "upstream's rmr_t is 24 bytes");
static_assert(offsetof(lci::rmr_t, base) == 0 && offsetof(lci::rmr_t, mr_base) == 8 &&
                  offsetof(lci::rmr_t, opaque_rkey) == 16,
              "upstream's field order");

// A client's message field: the rmr_t, then its own handle.
constexpr std::size_t field_bytes = 32;
constexpr std::uint64_t handle = 0x5eedf00dcafe;
constexpr std::size_t window_bytes = 256;
constexpr lci::tag_t field_tag = 7;

lci::status_t wait_for(lci::comp_t sync, lci::status_t status) {
  if (status.is_posted()) lci::sync_wait(sync, &status);
  return status;
}

void ship_and_use(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  const int me = lci::get_rank_me();
  require(lci::get_rank_n() == 2, "needs 2 ranks");
  std::vector<char> window(window_bytes, 0);
  lci::mr_t mr = lci::register_memory(window.data(), window.size());
  lci::comp_t sync = lci::alloc_sync();
  lci::comp_t signals = lci::alloc_cq();
  const lci::rcomp_t rcomp = lci::register_rcomp(signals);
  char field[field_bytes] = {};
  if (me == 1) {
    const lci::rmr_t rmr = lci::get_rmr(mr);
    std::memcpy(field, &rmr, sizeof(rmr));
    std::memcpy(field + sizeof(rmr), &handle, sizeof(handle));
    require(wait_for(sync, post_retrying([&] {
              return lci::post_send(0, field, field_bytes, field_tag, sync);
            })).is_done(),
            "sending the field failed");
    lci::status_t landed;
    do {
      (void)lci::progress();
      landed = lci::cq_pop(signals);
    } while (landed.is_retry());
    require(landed.rank == 0 && landed.size == window_bytes, "the put's signal");
    for (std::size_t i = 0; i < window_bytes; ++i) {
      require(window[i] == static_cast<char>(i), "window byte " + std::to_string(i));
    }
  } else {
    require(wait_for(sync, post_retrying([&] {
              return lci::post_recv(1, field, field_bytes, field_tag, sync);
            })).is_done(),
            "receiving the field failed");
    lci::rmr_t rmr;
    std::uint64_t got_handle = 0;
    std::memcpy(&rmr, field, sizeof(rmr));
    std::memcpy(&got_handle, field + sizeof(rmr), sizeof(got_handle));
    require(got_handle == handle, "the handle beside the rmr_t");
    std::vector<char> out(window_bytes);
    for (std::size_t i = 0; i < window_bytes; ++i) out[i] = static_cast<char>(i);
    lci::status_t put = wait_for(sync, post_retrying([&] {
      return lci::post_put_x(1, out.data(), window_bytes, sync, 0, rmr)
          .remote_comp(rcomp)
          .comp_semantic(lci::comp_semantic_t::network)();
    }));
    require(put.is_done(), std::string("the put: ") + put.error.get_str());
    std::vector<char> back(window_bytes, 0);
    const lci::status_t get = wait_for(sync, post_retrying([&] {
      return lci::post_get(1, back.data(), window_bytes, sync, 0, rmr);
    }));
    require(get.is_done() && back == out, "the get did not read the window back");
    const lci::status_t past = wait_for(sync, post_retrying([&] {
      return lci::post_put_x(1, out.data(), 2, sync, window_bytes - 1, rmr)
          .comp_semantic(lci::comp_semantic_t::network)();
    }));
    require(past.error.errorcode == lci::errorcode_t::fatal,
            std::string("a put one byte past the window: ") + past.error.get_str());
  }
  lci::barrier();
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&signals);
  lci::free_comp(&sync);
  lci::deregister_memory(&mr);
  lci::g_runtime_fina();
}

TEST(RmrLayout, ShippedRawBetweenRanks) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 3;
  lci::sim::expect_runs_ok(2, sweep, ship_and_use);
}

}  // namespace
