// The fault model: each fault kind fires (counted) and a correct workload
// survives it, in deterministic and concurrent mode; env overrides; each
// fault's exact effect; misuse throws naming the argument.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/sim_harness.hpp"
#include "sim/sim_seed.hpp"
#include "tests/sim/sim_network_workload.hpp"

namespace {

using lci::errorcode_t;
using lci::backend::net_status_t;
using lci::sim::fault_kind_t;
using lci::sim::rank_env_t;
using lci::sim::run_options_t;
using lci::sim::run_report_t;
using lci::sim::world_mode_t;
using lci::sim::testing::require;
using lci::sim::testing::ring_exchange;

run_options_t quiet(std::uint64_t seed, world_mode_t mode = world_mode_t::deterministic) {
  run_options_t options = lci::sim::default_run_options(seed, mode);
  options.log = false;
  return options;
}

const fault_kind_t survivable[] = {
    fault_kind_t::send_queue_full, fault_kind_t::no_recv_buffer, fault_kind_t::cq_pressure,
    fault_kind_t::lock_busy,       fault_kind_t::reorder,        fault_kind_t::delay_spike,
    fault_kind_t::preempt,
};

// Each fault on its own at a high rate: it fires, the ring still conserves.
TEST(SimNetworkFaults, EachFaultFiresAndIsSurvived) {
  for (fault_kind_t kind : survivable) {
    for (world_mode_t mode : {world_mode_t::deterministic, world_mode_t::concurrent}) {
      // Delays are virtual time: deterministic mode only (the concurrent
      // wire reorders by picking packets at random instead).
      const bool timed = kind == fault_kind_t::reorder || kind == fault_kind_t::delay_spike;
      if (timed && mode == world_mode_t::concurrent) continue;
      // A preemption is an OS thread's: concurrent mode only.
      if (kind == fault_kind_t::preempt && mode == world_mode_t::deterministic) continue;
      for (std::uint64_t seed : lci::sim::seeds_from_env(21, 3)) {
        run_options_t options = quiet(seed, mode);
        options.world.faults.rate(kind) = 0.3;
        const run_report_t report = lci::sim::run_ranks(4, options, [](rank_env_t& env) {
          ring_exchange(env, 30, nullptr);
        });
        ASSERT_TRUE(report.ok) << lci::sim::get_fault_name(kind) << "\n" << report.report;
        EXPECT_GT(report.faults_injected[static_cast<std::size_t>(kind)], 0u)
            << lci::sim::get_fault_name(kind) << " never fired";
        EXPECT_EQ(report.deliveries_count, 4u * 30u);
      }
    }
  }
}

TEST(SimNetworkFaults, EnvironmentSetsRates) {
  ::setenv("LCI_SIM_FAULT_LOCK_BUSY", "0.25", 1);
  ::setenv("LCI_SIM_FAULT_SEND_QUEUE_FULL", "0.5", 1);
  const run_options_t options = lci::sim::default_run_options(1);
  ::unsetenv("LCI_SIM_FAULT_LOCK_BUSY");
  ::unsetenv("LCI_SIM_FAULT_SEND_QUEUE_FULL");
  EXPECT_EQ(options.world.faults.rate(fault_kind_t::lock_busy), 0.25);
  EXPECT_EQ(options.world.faults.rate(fault_kind_t::send_queue_full), 0.5);
  EXPECT_EQ(options.world.faults.rate(fault_kind_t::rank_crash), 0.0);
  EXPECT_EQ(lci::sim::describe_faults(options.world.faults), "send_queue_full=0.5 lock_busy=0.25");
  EXPECT_EQ(lci::sim::describe_faults(lci::sim::fault_options_t{}), "none");
}

// The send queue holds net_max_sends posts; the next is refused with
// retry_nomem and changes nothing; a poll that frees a slot lets it through.
TEST(SimNetworkFaults, SendQueueDepthGivesRetryNomem) {
  const run_report_t report = lci::sim::run_ranks(2, quiet(3), [](rank_env_t& env) {
    lci::backend::net_device_attr_t attr;
    attr.net_max_sends = 4;
    auto device = env.context().alloc_device(attr);
    std::vector<char> buffers(8 * 16);
    if (env.rank() == 0) {
      for (int i = 0; i < 4; ++i) {
        require(device->post_sends(1, buffers.data(), 8, i).is_done(), "first four fit");
      }
      require(device->post_sends(1, buffers.data(), 8, 4) == errorcode_t::retry_nomem,
              "the fifth must be retry_nomem");
    } else {
      for (int i = 0; i < 4; ++i) {
        require(device->post_recv(buffers.data() + i * 16, 16, {}, nullptr).is_done(), "recv");
      }
      net_status_t statuses[4];
      std::size_t received = 0;
      while (received < 4) {
        received += device->poll_comp(statuses, 4);
        env.wait("four messages");
      }
    }
    env.barrier();
  });
  EXPECT_TRUE(report.ok) << report.report;
}

// A message sent before the receiver posts a buffer waits (RNR) and is
// delivered once a buffer is posted; and cq_pressure = 1 starves poll_comp.
TEST(SimNetworkFaults, MessageWaitsForAReceiveBuffer) {
  const run_report_t report = lci::sim::run_ranks(2, quiet(4), [](rank_env_t& env) {
    auto device = env.context().alloc_device({});
    char buffer[16] = {};
    net_status_t status;
    if (env.rank() == 0) {
      require(device->post_send(1, "hello", 6, {}, 9, nullptr).is_posted(), "post_send");
      while (device->poll_comp(&status, 1) == 0) env.wait("send completion");
    } else {
      lci::sim::scheduler_t::sleep_ticks(50'000);  // long after the message arrived
      require(env.world().describe_ranks().find("messages waiting here 1") != std::string::npos,
              "the message should wait at rank 1");
      require(device->post_recv(buffer, sizeof(buffer), {}, nullptr).is_done(), "post_recv");
      while (device->poll_comp(&status, 1) == 0) env.wait("the message");
      require(std::string(buffer) == "hello" && status.imm_data == 9, "payload");
    }
    env.barrier();
  });
  EXPECT_TRUE(report.ok) << report.report;
}

// Rate 1: every call meets the fault; nothing changes.
TEST(SimNetworkFaults, CertainFaultsChangeNothing) {
  run_options_t options = quiet(5);
  options.world.faults.rate(fault_kind_t::lock_busy) = 1.0;
  const run_report_t busy = lci::sim::run_ranks(1, options, [](rank_env_t& env) {
    auto device = env.context().alloc_device({});
    char buffer[8] = {};
    net_status_t status;
    require(device->post_recv(buffer, 8, {}, nullptr) == errorcode_t::retry_lock, "recv");
    require(device->post_sends(0, buffer, 8, 0) == errorcode_t::retry_lock, "sends");
    require(device->poll_comp(&status, 1) == 0, "poll");
  });
  EXPECT_TRUE(busy.ok) << busy.report;
  options.world.faults.rate(fault_kind_t::lock_busy) = 0.0;
  options.world.faults.rate(fault_kind_t::registration_failure) = 1.0;
  const run_report_t no_mr = lci::sim::run_ranks(1, options, [](rank_env_t& env) {
    auto device = env.context().alloc_device({});
    char buffer[8];
    lci::backend::net_mr_t mr;
    require(device->register_memory(buffer, 8, &mr) == errorcode_t::retry_nomem, "register");
    require(mr.is_empty(), "a failed registration leaves mr empty");
  });
  EXPECT_TRUE(no_mr.ok) << no_mr.report;
}

TEST(SimNetworkFaults, RegistrationsMaxGivesRetryNomem) {
  run_options_t options = quiet(6);
  options.world.registrations_max = 3;
  const run_report_t report = lci::sim::run_ranks(1, options, [](rank_env_t& env) {
    auto device = env.context().alloc_device({});
    char buffer[64];
    lci::backend::net_mr_t mrs[4];
    for (int i = 0; i < 3; ++i) {
      require(device->register_memory(buffer + i, 8, &mrs[i]).is_done(), "register");
    }
    require(device->register_memory(buffer, 8, &mrs[3]) == errorcode_t::retry_nomem, "full");
    device->deregister_memory(&mrs[0]);
    require(device->register_memory(buffer, 8, &mrs[3]).is_done(), "a freed slot");
    for (int i = 1; i < 4; ++i) device->deregister_memory(&mrs[i]);
  });
  EXPECT_TRUE(report.ok) << report.report;
}

// Misuse is thrown, naming the argument and value; nothing is posted.
TEST(SimNetworkFaults, MisuseThrowsNamingTheArgument) {
  const run_report_t report = lci::sim::run_ranks(2, quiet(7), [](rank_env_t& env) {
    auto device = env.context().alloc_device({});
    char buffer[256] = {};
    auto message_of = [](auto&& call) -> std::string {
      try {
        (void)call();
      } catch (const std::invalid_argument& error) {
        return error.what();
      }
      return "";
    };
    const std::string bad_rank = message_of([&] { return device->post_sends(5, buffer, 8, 0); });
    require(bad_rank.find("rank 5") != std::string::npos, "bad rank: " + bad_rank);
    const std::string too_big = message_of([&] { return device->post_sends(0, buffer, 200, 0); });
    require(too_big.find("size 200") != std::string::npos, "inject size: " + too_big);
    const std::string null_buffer =
        message_of([&] { return device->post_send(0, nullptr, 8, {}, 0, nullptr); });
    require(null_buffer.find("null") != std::string::npos, "null: " + null_buffer);
    env.barrier();
  });
  EXPECT_TRUE(report.ok) << report.report;
}

}  // namespace
