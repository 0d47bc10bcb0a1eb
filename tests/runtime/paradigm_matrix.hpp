// The paradigm matrix's dimensions, shared by every backend's matrix test
// (tests/runtime/paradigm_matrix_test.cpp on the simulated network,
// tests/backends/ibv/ibv_paradigm_matrix_test.cpp on the emulated verbs device):
// every paradigm x message sizes across the protocol thresholds x
// completion object x {1, 4} threads x {shared device, device per thread} x
// {2, 4} ranks. tests/runtime/workload.hpp says what one case does.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "tests/runtime/workload.hpp"

namespace lci::runtime_test {

// (threads, device per thread, ranks, size, completion, paradigm). The
// paradigm varies fastest: gtest shards take every n-th case, and the
// costly dimensions (threads, ranks, size) must spread over the shards.
using matrix_param_t = std::tuple<int, bool, int, size_class_t, completion_t, paradigm_t>;

inline workload_t workload_of(const matrix_param_t& param) {
  workload_t workload;
  workload.threads_count = std::get<0>(param);
  workload.device_per_thread = std::get<1>(param);
  workload.size = std::get<3>(param);
  workload.completion = std::get<4>(param);
  workload.paradigm = std::get<5>(param);
  return workload;
}

inline int ranks_count_of(const matrix_param_t& param) { return std::get<2>(param); }

inline std::string matrix_case_name(const ::testing::TestParamInfo<matrix_param_t>& info) {
  return describe(workload_of(info.param)) + "_r" + std::to_string(ranks_count_of(info.param));
}

// Every case, for INSTANTIATE_TEST_SUITE_P.
inline auto matrix_cases() {
  return ::testing::Combine(
      ::testing::Values(1, 4), ::testing::Bool(), ::testing::Values(2, 4),
      ::testing::Values(size_class_t::zero, size_class_t::eight, size_class_t::inject,
                        size_class_t::inject_plus_1, size_class_t::bcopy,
                        size_class_t::bcopy_plus_1, size_class_t::k64, size_class_t::m1),
      ::testing::Values(completion_t::sync, completion_t::cq_lcrq, completion_t::cq_array,
                        completion_t::handler, completion_t::counter, completion_t::graph),
      ::testing::Values(paradigm_t::send_recv, paradigm_t::am, paradigm_t::put,
                        paradigm_t::put_signal, paradigm_t::get, paradigm_t::get_signal));
}

}  // namespace lci::runtime_test
