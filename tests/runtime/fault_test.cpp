// The runtime under the simulated network's fault model (sim/sim_faults.hpp):
// the matrix's workload (tests/runtime/workload.hpp) with one fault at a
// time turned on still delivers every message exactly once, to the right
// buffer, with the right status. Also forced: the retry path (posts that
// return retry), the backlog path (allow_retry(false) posts the network
// refuses), COMP_NULL sends, and rank crashes seen by the peers.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "sim/sim_harness_gtest.hpp"
#include "tests/runtime/workload.hpp"

namespace {

using lci::runtime_test::completion_t;
using lci::runtime_test::paradigm_t;
using lci::runtime_test::size_class_t;
using lci::runtime_test::workload_stats_t;
using lci::runtime_test::workload_t;
using lci::sim::fault_kind_t;

constexpr int fault_ranks_count = 3;
constexpr std::size_t fault_seeds_count = 16;

struct fault_rate_t {
  fault_kind_t kind;
  double rate;
};

// High enough that every run meets the fault many times.
constexpr fault_rate_t fault_rates[] = {
    {fault_kind_t::send_queue_full, 0.2},      {fault_kind_t::no_recv_buffer, 0.3},
    {fault_kind_t::cq_pressure, 0.5},          {fault_kind_t::lock_busy, 0.2},
    {fault_kind_t::reorder, 0.5},              {fault_kind_t::delay_spike, 0.05},
    {fault_kind_t::registration_failure, 0.3},
};

lci::sim::sweep_t fault_sweep(const workload_t& workload, fault_rate_t fault) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = fault_seeds_count;
  sweep.configure = [workload, fault](lci::sim::run_options_t& options) {
    options.world.faults.rate(fault.kind) = fault.rate;
    options.world.devices_per_rank_max = std::max<std::size_t>(
        options.world.devices_per_rank_max,
        static_cast<std::size_t>(lci::runtime_test::devices_per_rank(workload)));
    options.log = false;  // a failure's report names the seed and the replay line
  };
  return sweep;
}

// Runs `workload` over the fault sweep; returns how many faults of the kind
// the deterministic runs injected.
std::uint64_t run_with_fault(const workload_t& workload, fault_rate_t fault) {
  const std::vector<lci::sim::run_report_t> reports = lci::sim::expect_runs_ok(
      fault_ranks_count, fault_sweep(workload, fault),
      [&workload](lci::sim::rank_env_t& env) { lci::runtime_test::run_workload(env, workload); });
  std::uint64_t injected = 0;
  for (const auto& report : reports) injected += report.faults_injected[static_cast<int>(fault.kind)];
  return injected;
}

// ---- one fault at a time, every paradigm ----

using fault_param_t = std::tuple<fault_rate_t, paradigm_t>;

class FaultWorkload : public ::testing::TestWithParam<fault_param_t> {};

// An eager size through a shared device and completion queue, and a
// zero-copy size through per-thread devices and handlers.
TEST_P(FaultWorkload, DeliversEveryMessageExactlyOnce) {
  LCI_SIM_ONLY("injects faults through the simulated world");
  const fault_rate_t fault = std::get<0>(GetParam());
  std::uint64_t injected = 0;
  for (const bool zero_copy : {false, true}) {
    workload_t workload;
    workload.paradigm = std::get<1>(GetParam());
    workload.size = zero_copy ? size_class_t::k64 : size_class_t::inject_plus_1;
    workload.completion = zero_copy ? completion_t::handler : completion_t::cq_lcrq;
    workload.threads_count = 2;
    workload.device_per_thread = zero_copy;
    SCOPED_TRACE(lci::runtime_test::describe(workload));
    injected += run_with_fault(workload, fault);
  }
  EXPECT_GT(injected, 0u) << "the fault never fired";
}

std::string fault_case_name(const ::testing::TestParamInfo<fault_param_t>& info) {
  return std::string(lci::sim::get_fault_name(std::get<0>(info.param).kind)) + "_" +
         lci::runtime_test::get_paradigm_str(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    EachFault, FaultWorkload,
    ::testing::Combine(::testing::ValuesIn(fault_rates),
                       ::testing::Values(paradigm_t::send_recv, paradigm_t::am, paradigm_t::put,
                                         paradigm_t::put_signal, paradigm_t::get,
                                         paradigm_t::get_signal)),
    fault_case_name);

// ---- the retry and backlog paths ----

constexpr fault_rate_t full_send_queue{fault_kind_t::send_queue_full, 0.3};

// A full send queue makes posts return retry; the caller progresses and
// posts again.
TEST(FaultPaths, PostsReturnRetryAndSucceedLater) {
  LCI_SIM_ONLY("injects faults through the simulated world");
  workload_stats_t stats;
  for (const paradigm_t paradigm : {paradigm_t::send_recv, paradigm_t::am, paradigm_t::put,
                                    paradigm_t::get_signal}) {
    workload_t workload;
    workload.paradigm = paradigm;
    workload.size = size_class_t::eight;
    workload.completion = completion_t::cq_array;
    workload.threads_count = 2;
    workload.stats = &stats;
    SCOPED_TRACE(lci::runtime_test::describe(workload));
    run_with_fault(workload, full_send_queue);
  }
  EXPECT_GT(stats.retries.load(lci::util::mo_relaxed), 0u);  // relaxed: the runs are over
}

// allow_retry(false): a refused post goes to the backlog queue, comes back
// as posted_backlog, and completes through its completion object.
class BacklogWorkload : public ::testing::TestWithParam<paradigm_t> {};

TEST_P(BacklogWorkload, RefusedPostsCompleteFromTheBacklog) {
  LCI_SIM_ONLY("injects faults through the simulated world");
  workload_stats_t stats;
  for (const size_class_t size : {size_class_t::eight, size_class_t::bcopy, size_class_t::k64}) {
    workload_t workload;
    workload.paradigm = GetParam();
    workload.size = size;
    workload.completion = completion_t::sync;
    workload.threads_count = 2;
    workload.backlog = true;
    workload.stats = &stats;
    SCOPED_TRACE(lci::runtime_test::describe(workload));
    run_with_fault(workload, full_send_queue);
  }
  EXPECT_GT(stats.backlogged.load(lci::util::mo_relaxed), 0u);  // relaxed: the runs are over
}

INSTANTIATE_TEST_SUITE_P(EachParadigm, BacklogWorkload,
                         ::testing::Values(paradigm_t::send_recv, paradigm_t::am, paradigm_t::put,
                                           paradigm_t::put_signal, paradigm_t::get,
                                           paradigm_t::get_signal),
                         [](const ::testing::TestParamInfo<paradigm_t>& info) {
                           return std::string(lci::runtime_test::get_paradigm_str(info.param));
                         });

// COMP_NULL sends and active messages: done at once, or queued on the
// backlog when the network refuses; the target receives each exactly once.
TEST(FaultPaths, CompNullSendsArriveExactlyOnce) {
  LCI_SIM_ONLY("injects faults through the simulated world");
  workload_stats_t stats;
  for (const paradigm_t paradigm : {paradigm_t::send_recv, paradigm_t::am}) {
    for (const size_class_t size : {size_class_t::zero, size_class_t::inject,
                                    size_class_t::inject_plus_1, size_class_t::bcopy}) {
      workload_t workload;
      workload.paradigm = paradigm;
      workload.size = size;
      workload.completion = completion_t::cq_lcrq;
      workload.threads_count = 2;
      workload.comp_null = true;
      workload.stats = &stats;
      SCOPED_TRACE(lci::runtime_test::describe(workload));
      run_with_fault(workload, full_send_queue);
    }
  }
  EXPECT_GT(stats.backlogged.load(lci::util::mo_relaxed), 0u);  // relaxed: the runs are over
}

// The write rendezvous protocol (a FIN message instead of a write with
// immediate data) under reordering and a full send queue.
TEST(FaultPaths, WriteRendezvousUnderFaults) {
  LCI_SIM_ONLY("injects faults through the simulated world");
  for (const fault_rate_t fault : {full_send_queue, fault_rate_t{fault_kind_t::reorder, 0.5}}) {
    for (const paradigm_t paradigm : {paradigm_t::send_recv, paradigm_t::am}) {
      workload_t workload;
      workload.paradigm = paradigm;
      workload.size = size_class_t::k64;
      workload.completion = completion_t::cq_lcrq;
      workload.threads_count = 2;
      workload.rdv_protocol = lci::attr_rdv_protocol_t::write;
      SCOPED_TRACE(lci::runtime_test::describe(workload));
      run_with_fault(workload, fault);
    }
  }
}

}  // namespace
