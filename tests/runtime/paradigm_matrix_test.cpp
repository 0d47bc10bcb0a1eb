// The runtime test matrix: every communication paradigm x message sizes
// across the protocol thresholds x completion object x {1, 4} threads x
// {shared device, device per thread}, on 2 and 4 ranks; each case runs in
// deterministic mode over seeds and once in concurrent mode (real threads:
// the ThreadSanitizer build checks it; sanitizer builds run one mode each,
// see below). tests/runtime/workload.hpp says what
// one case does and checks.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/paradigm_matrix.hpp"
#include "tests/runtime/workload.hpp"

namespace {

using lci::runtime_test::matrix_param_t;
using lci::runtime_test::ranks_count_of;
using lci::runtime_test::size_class_t;
using lci::runtime_test::workload_of;
using lci::runtime_test::workload_t;

#if defined(__SANITIZE_THREAD__)
#define LCI_MATRIX_TSAN 1
#elif defined(__SANITIZE_ADDRESS__)
#define LCI_MATRIX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LCI_MATRIX_TSAN 1
#elif __has_feature(address_sanitizer)
#define LCI_MATRIX_ASAN 1
#endif
#endif

// Sanitizer builds are an order of magnitude slower on every byte moved, so
// each runs only the mode it is there for: ThreadSanitizer the concurrent
// run (real threads; in deterministic mode every rank is a fiber of one OS
// thread, nothing for it to find), AddressSanitizer one deterministic seed
// (the same memory accesses, replayable). The default build does both.
#if defined(LCI_MATRIX_TSAN)
constexpr bool deterministic_runs = false;
constexpr bool concurrent_run = true;
#elif defined(LCI_MATRIX_ASAN)
constexpr bool deterministic_runs = true;
constexpr bool concurrent_run = false;
#else
constexpr bool deterministic_runs = true;
constexpr bool concurrent_run = true;
#endif
constexpr bool sanitized = !deterministic_runs || !concurrent_run;

// Deterministic seeds per case: the matrix has 2304 cases, so the light ones
// get a few seeds and the heavy ones (4 ranks x 4 threads of zero-copy
// messages) one; sanitizer builds run at most one (above).
std::size_t seeds_count_of(const workload_t& workload, int ranks_count) {
  if (!deterministic_runs) return 0;
  if (sanitized) return 1;
  const bool zero_copy = workload.size == size_class_t::k64 || workload.size == size_class_t::m1;
  const int weight = ranks_count * workload.threads_count * (zero_copy ? 4 : 1);
  if (weight <= 4) return 3;
  if (weight <= 16) return 2;
  return 1;
}

class ParadigmMatrix : public ::testing::TestWithParam<matrix_param_t> {};

TEST_P(ParadigmMatrix, DeliversEveryByteAndEveryStatus) {
  const workload_t workload = workload_of(GetParam());
  const int ranks_count = ranks_count_of(GetParam());
  lci::sim::sweep_t sweep;
  sweep.seeds_count = seeds_count_of(workload, ranks_count);
  sweep.concurrent = concurrent_run;
  sweep.configure = [&workload](lci::sim::run_options_t& options) {
    options.world.devices_per_rank_max = std::max<std::size_t>(
        options.world.devices_per_rank_max,
        static_cast<std::size_t>(lci::runtime_test::devices_per_rank(workload)));
    options.log = false;  // a failure's report names the seed and the replay line
    // As over libfabric's shm and tcp: an RMA lands only while its target
    // polls, so a rank that stops polling before its peers' puts and gets
    // are done hangs here too, deterministically, not only over a real
    // network one run in five.
    options.world.rma_waits_for_target = true;
    // Half the seeds as verbs (local buffers registered), half as libfabric
    // (registering only what a peer addresses); the seed alone decides, so
    // a replay reproduces it.
    options.world.requires_local_mr = options.world.seed % 2 == 0;
    // Half the seeds with multi-receive buffers, half with one buffer per
    // message; the next bit of the seed, so every pairing with the above runs.
    options.world.multi_recv = (options.world.seed / 2) % 2 == 0;
  };
  lci::sim::expect_runs_ok(ranks_count, sweep, [&workload](lci::sim::rank_env_t& env) {
    lci::runtime_test::run_workload(env, workload);
  });
}

INSTANTIATE_TEST_SUITE_P(All, ParadigmMatrix, lci::runtime_test::matrix_cases(),
                         lci::runtime_test::matrix_case_name);

}  // namespace
