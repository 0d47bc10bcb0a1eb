// Zero-copy active messages: a completion object allocated with
// zero_copy_am(true) receives an eager AM (size <= get_max_bcopy_size())
// in its packet — put_upacket takes the status's buffer back, whether a
// header led the payload or not — while a larger (rendezvous) AM, and any
// AM to an ordinary object, arrives in a malloc'd buffer that put_upacket
// refuses. The harness's teardown checks every packet went home, so a
// packet the runtime lost or the user could not return fails the run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>
#include <stdexcept>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

constexpr lci::tag_t tag_in_imm = 3;
constexpr lci::tag_t tag_in_header = lci::tag_t{1} << 20;  // over imm_nbits_tag

// Whether put_upacket takes `buffer` back (it throws on a malloc'd one).
bool put_upacket_takes(void* buffer) {
  try {
    lci::put_upacket(buffer);
  } catch (const std::invalid_argument&) {
    return false;
  }
  return true;
}

lci::status_t pop_one(lci::comp_t cq) {
  lci::status_t status;
  do {
    (void)lci::progress();
    status = lci::cq_pop(cq);
  } while (status.is_retry());
  return status;
}

// Checks one AM's payload ('a' + size % 26 throughout) and hands its
// buffer back the way its kind requires.
void check_and_release(const lci::status_t& status, std::size_t size, bool expect_packet) {
  require(status.is_done() && status.rank == 0 && status.size == size,
          "AM of " + std::to_string(size) + " bytes: wrong status");
  const auto* bytes = static_cast<const char*>(status.buffer);
  for (std::size_t i = 0; i < size; ++i) {
    require(bytes[i] == static_cast<char>('a' + size % 26),
            "AM of " + std::to_string(size) + " bytes: wrong data");
  }
  const bool in_packet = put_upacket_takes(status.buffer);
  require(in_packet == expect_packet, "AM of " + std::to_string(size) + " bytes: " +
                                          (expect_packet ? "not in a packet" : "in a packet"));
  if (!in_packet) std::free(status.buffer);
}

TEST(ZeroCopyAm, EagerAmsArriveInTheirPacket) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.configure = [](lci::sim::run_options_t& options) { options.log = false; };
  lci::sim::expect_runs_ok(2, sweep, [](lci::sim::rank_env_t& env) {
    lci::g_runtime_init();
    // Registered in the same order on both ranks: the same rcomp values.
    lci::comp_t zero_copy_cq = lci::alloc_cq_x().zero_copy_am(true)();
    lci::comp_t copy_cq = lci::alloc_cq();
    require(zero_copy_cq.get_attr_zero_copy_am(), "zero_copy_am attribute lost");
    const lci::rcomp_t zero_copy_rcomp = lci::register_rcomp(zero_copy_cq);
    const lci::rcomp_t copy_rcomp = lci::register_rcomp(copy_cq);
    const std::size_t small = 40;
    const std::size_t bcopy_max = lci::get_max_bcopy_size();
    const std::size_t large = bcopy_max * 2;
    lci::barrier();
    // (size, tag, rcomp): delivered in a packet exactly when the object is
    // zero-copy and size <= get_max_bcopy_size().
    const std::vector<std::tuple<std::size_t, lci::tag_t, lci::rcomp_t>> ams = {
        {small, tag_in_imm, zero_copy_rcomp},
        {small + 1, tag_in_header, zero_copy_rcomp},
        {bcopy_max, tag_in_header, zero_copy_rcomp},
        {large, tag_in_imm, zero_copy_rcomp},
        {small + 2, tag_in_imm, copy_rcomp}};
    if (env.rank() == 0) {
      for (const auto& [size, tag, rcomp] : ams) {
        lci::comp_t sync = lci::alloc_sync();
        std::vector<char> data(size, static_cast<char>('a' + size % 26));
        const lci::status_t status = post_retrying([&, size = size, tag = tag, rcomp = rcomp] {
          return lci::post_am_x(1, data.data(), size, sync, rcomp).tag(tag)();
        });
        if (status.is_posted()) lci::sync_wait(sync, nullptr);
        lci::free_comp(&sync);
      }
    } else {
      // Arrival order is not promised: each AM is known by its size.
      std::vector<std::size_t> seen;
      for (std::size_t i = 0; i + 1 < ams.size(); ++i) {
        const lci::status_t status = pop_one(zero_copy_cq);
        check_and_release(status, status.size, status.size <= bcopy_max);
        seen.push_back(status.size);
      }
      std::sort(seen.begin(), seen.end());
      require(seen == std::vector<std::size_t>{small, small + 1, bcopy_max, large},
              "the zero-copy queue got the wrong AMs");
      check_and_release(pop_one(copy_cq), small + 2, false);
    }
    lci::barrier();
    lci::deregister_rcomp(copy_rcomp);
    lci::deregister_rcomp(zero_copy_rcomp);
    lci::free_comp(&copy_cq);
    lci::free_comp(&zero_copy_cq);
    lci::g_runtime_fina();
  });
}

}  // namespace
