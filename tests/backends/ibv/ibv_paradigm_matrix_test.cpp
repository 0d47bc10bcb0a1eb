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


#include "sim/sim_harness_gtest.hpp"
#include "tests/backends/ibv/ibv_emu_runtime.hpp"
#include "tests/runtime/paradigm_matrix.hpp"
#include "tests/runtime/workload.hpp"

namespace {

using lci::runtime_test::matrix_param_t;
using lci::runtime_test::ranks_count_of;
using lci::runtime_test::workload_of;
using lci::runtime_test::workload_t;

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

INSTANTIATE_TEST_SUITE_P(All, IbvParadigmMatrix, lci::runtime_test::matrix_cases(),
                         lci::runtime_test::matrix_case_name);

}  // namespace
