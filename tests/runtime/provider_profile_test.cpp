// The runtime over the simulator's provider profiles (sim/sim_profile.hpp):
// a cut of the paradigm matrix's workload (workload.hpp) under the default
// profile, shm and tcp;ofi_rxm. Under the providers' profiles the device
// refuses posts as they do (first post to a peer until the peer polls, a
// small put holding its peer, queue bounds), keeps completions past the
// CQ's depth, lets RMA land only while the target polls and has their
// inject and queue sizes; the runtime must deliver every byte and status
// all the same. Deterministic seeds plus one concurrent run per case.
// LCI_SIM_PROFILE=<name> runs only that profile's cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_profile.hpp"
#include "tests/runtime/workload.hpp"

namespace {

using lci::runtime_test::completion_t;
using lci::runtime_test::paradigm_t;
using lci::runtime_test::size_class_t;
using lci::runtime_test::workload_t;
using lci::sim::profile_kind_t;

struct profile_case_t {
  const char* name;
  int ranks_count;
  workload_t workload;
};

workload_t make(paradigm_t paradigm, size_class_t size, completion_t completion,
                int threads = 1, bool device_per_thread = false) {
  workload_t workload;
  workload.paradigm = paradigm;
  workload.size = size;
  workload.completion = completion;
  workload.threads_count = threads;
  workload.device_per_thread = device_per_thread;
  return workload;
}

// Every paradigm once, small and large (eager, inject, rendezvous), and
// cases with threads (devices of their own, or one shared) on 4 ranks.
std::vector<profile_case_t> cases() {
  return {
      {"send_recv_eight", 2, make(paradigm_t::send_recv, size_class_t::eight, completion_t::sync)},
      {"send_recv_k64", 2, make(paradigm_t::send_recv, size_class_t::k64, completion_t::cq_lcrq)},
      {"am_bcopy", 2, make(paradigm_t::am, size_class_t::bcopy, completion_t::cq_lcrq)},
      {"put_eight", 2, make(paradigm_t::put, size_class_t::eight, completion_t::handler)},
      {"put_k64", 2, make(paradigm_t::put, size_class_t::k64, completion_t::sync)},
      {"put_signal_inject_plus_1", 2,
       make(paradigm_t::put_signal, size_class_t::inject_plus_1, completion_t::cq_array)},
      {"get_k64", 2, make(paradigm_t::get, size_class_t::k64, completion_t::counter)},
      {"get_signal_eight", 2, make(paradigm_t::get_signal, size_class_t::eight, completion_t::sync)},
      {"am_k64_t4_r4", 4,
       make(paradigm_t::am, size_class_t::k64, completion_t::cq_lcrq, 4, /*device_per_thread=*/true)},
      // Threads sharing one device: many small puts to one peer at once
      // (shm's one-small-put-per-peer refusals), and eager sends.
      {"put_eight_t4_r4", 4, make(paradigm_t::put, size_class_t::eight, completion_t::cq_lcrq, 4)},
      {"send_recv_bcopy_t4_r4", 4,
       make(paradigm_t::send_recv, size_class_t::bcopy, completion_t::handler, 4)},
  };
}

// Every profile, or only LCI_SIM_PROFILE's when it is set (a replay).
std::vector<profile_kind_t> profiles() {
  const char* name = std::getenv("LCI_SIM_PROFILE");
  profile_kind_t only = profile_kind_t::default_profile;
  if (name != nullptr && *name != '\0' && lci::sim::parse_profile_name(name, &only)) return {only};
  return {profile_kind_t::default_profile, profile_kind_t::shm, profile_kind_t::tcp};
}

using param_t = std::tuple<profile_kind_t, profile_case_t>;

class ProviderProfile : public ::testing::TestWithParam<param_t> {};

TEST_P(ProviderProfile, DeliversEveryByteAndEveryStatus) {
  const profile_kind_t profile = std::get<0>(GetParam());
  const profile_case_t& c = std::get<1>(GetParam());
  const workload_t workload = c.workload;
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [&workload, profile](lci::sim::run_options_t& options) {
    // default_run_options applied LCI_SIM_PROFILE already when it is set.
    if (options.world.profile.kind != profile) {
      lci::sim::apply_provider_profile(&options.world, profile);
    }
    options.world.devices_per_rank_max = std::max<std::size_t>(
        options.world.devices_per_rank_max,
        static_cast<std::size_t>(lci::runtime_test::devices_per_rank(workload)));
    options.log = false;  // a failure's report names the seed and the replay line
    // The default profile as the paradigm matrix runs it: manual progress.
    options.world.rma_waits_for_target = true;
  };
  lci::sim::expect_runs_ok(c.ranks_count, sweep, [&workload](lci::sim::rank_env_t& env) {
    lci::runtime_test::run_workload(env, workload);
  });
}

std::string case_name(const ::testing::TestParamInfo<param_t>& info) {
  return std::string(lci::sim::get_profile_name(std::get<0>(info.param))) + "_" +
         std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(All, ProviderProfile,
                         ::testing::Combine(::testing::ValuesIn(profiles()),
                                            ::testing::ValuesIn(cases())),
                         case_name);

}  // namespace
