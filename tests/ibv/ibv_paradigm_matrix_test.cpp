// The runtime's paradigm matrix (tests/runtime/paradigm_matrix_test.cpp,
// tests/runtime/workload.hpp) over the ibv backend on the emulated verbs
// device (ibv_emu_runtime.hpp): every paradigm x sizes across the protocol
// thresholds (inject, buffer copy, rendezvous) x completion kinds x {1, 4}
// threads x {shared device, device per thread} x {2, 4} ranks, two seeded
// deterministic runs each (the fabric and the ranks' schedule both follow
// the seed). Concurrent mode is left to the conformance suite: the emulated
// clock runs as fast as the busiest poller there (docs/backends/ibv.md).
// The ThreadSanitizer build skips it (one OS thread, nothing to find).
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "sim/sim_harness_gtest.hpp"
#include "tests/ibv/ibv_emu_runtime.hpp"
#include "tests/runtime/workload.hpp"

namespace {

using lci::runtime_test::completion_t;
using lci::runtime_test::paradigm_t;
using lci::runtime_test::size_class_t;
using lci::runtime_test::workload_t;

// (threads, device per thread, ranks, size, completion, paradigm); the
// paradigm varies fastest, so that shards mix the costly dimensions.
using matrix_param_t = std::tuple<int, bool, int, size_class_t, completion_t, paradigm_t>;

workload_t workload_of(const matrix_param_t& param) {
  workload_t workload;
  workload.threads_count = std::get<0>(param);
  workload.device_per_thread = std::get<1>(param);
  workload.size = std::get<3>(param);
  workload.completion = std::get<4>(param);
  workload.paradigm = std::get<5>(param);
  return workload;
}

int ranks_count_of(const matrix_param_t& param) { return std::get<2>(param); }

class IbvParadigmMatrix : public ::testing::TestWithParam<matrix_param_t> {};

TEST_P(IbvParadigmMatrix, DeliversEveryByteAndEveryStatus) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "deterministic mode only: one OS thread, nothing for ThreadSanitizer";
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  GTEST_SKIP() << "deterministic mode only: one OS thread, nothing for ThreadSanitizer";
#endif
#endif
  const workload_t workload = workload_of(GetParam());
  const int ranks_count = ranks_count_of(GetParam());
  lci::sim::sweep_t sweep;
  // AddressSanitizer (every byte moved costs ten times more): one seed.
#if defined(__SANITIZE_ADDRESS__)
  sweep.seeds_count = 1;
#else
  sweep.seeds_count = 2;
#endif
  sweep.concurrent = false;
  sweep.configure = [ranks_count](lci::sim::run_options_t& options) {
    options.log = false;  // a failure's report names the seed and the replay line
    (void)lci::ibv_test::use_emulated_ibv(&options, ranks_count);
  };
  lci::sim::expect_runs_ok(ranks_count, sweep, [&workload](lci::sim::rank_env_t& env) {
    lci::runtime_test::run_workload(env, workload);
  });
}

std::string case_name(const ::testing::TestParamInfo<matrix_param_t>& info) {
  return lci::runtime_test::describe(workload_of(info.param)) + "_r" +
         std::to_string(ranks_count_of(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    All, IbvParadigmMatrix,
    ::testing::Combine(::testing::Values(1, 4), ::testing::Bool(), ::testing::Values(2, 4),
                       ::testing::Values(size_class_t::zero, size_class_t::eight,
                                         size_class_t::inject, size_class_t::inject_plus_1,
                                         size_class_t::bcopy, size_class_t::bcopy_plus_1,
                                         size_class_t::k64, size_class_t::m1),
                       ::testing::Values(completion_t::sync, completion_t::cq_lcrq,
                                         completion_t::cq_array, completion_t::handler,
                                         completion_t::counter, completion_t::graph),
                       ::testing::Values(paradigm_t::send_recv, paradigm_t::am, paradigm_t::put,
                                         paradigm_t::put_signal, paradigm_t::get,
                                         paradigm_t::get_signal)),
    case_name);

}  // namespace
