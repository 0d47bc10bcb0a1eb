// A peer that dies must surface as a fault naming it, never as a hang. Run
// under tools/lcirun -n 2 (tests/backends/ofi/BUILD): both ranks open a device;
// rank 1 then exits without closing anything (as a crash would leave it),
// and rank 0 keeps sending to it until a completion reports peer_crashed for
// rank 1, then checks that a put and a get to it fail the same way, and that
// the device reported the dead rank on its own exactly once (peer_down). Prints
// "dead peer reported: <describe_fault>" and exits 0; exits 1 on anything
// else, or when nothing was reported within deadline_s.
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/ofi/ofi_context.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "tests/backends/ofi/ofi_test_env.hpp"

namespace {

using lci::backend::net_device_t;
using lci::backend::net_fault_t;
using lci::backend::net_mr_t;
using lci::backend::net_opcode_t;
using lci::backend::net_rmr_t;
using lci::backend::net_status_t;

constexpr int deadline_s = 30;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  std::exit(1);
}

net_mr_t register_or_fail(net_device_t& device, void* address, std::size_t size) {
  constexpr int attempts_max = 1000;
  net_mr_t mr;
  for (int attempt = 0; attempt < attempts_max; ++attempt) {
    if (!device.register_memory(address, size, &mr).is_retry()) return mr;
  }
  fail("register_memory refused " + std::to_string(attempts_max) + " times");
}

bool past(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::steady_clock::now() > deadline;
}

// The backend's own dead-peer reports (opcode peer_down) seen so far.
int g_peer_down_reports = 0;

// Polls until a completion with a fault arrives; successes are skipped, and
// so are peer_down reports (counted; each must name rank 1).
net_status_t wait_for_fault(net_device_t& device, std::chrono::steady_clock::time_point deadline,
                            const std::function<void()>& between) {
  net_status_t statuses[16];
  while (!past(deadline)) {
    const std::size_t count = device.poll_comp(statuses, 16);
    for (std::size_t i = 0; i < count; ++i) {
      if (statuses[i].opcode == net_opcode_t::peer_down) {
        if (statuses[i].rank != 1 || statuses[i].fault != net_fault_t::peer_crashed ||
            statuses[i].user_context != nullptr) {
          fail("a malformed peer_down report: " + lci::backend::describe_fault(statuses[i]));
        }
        ++g_peer_down_reports;
        continue;
      }
      if (statuses[i].fault != net_fault_t::none) return statuses[i];
    }
    between();
    sched_yield();
  }
  fail("no fault within " + std::to_string(deadline_s) + " s");
}

void check_crash_fault(const net_status_t& status, net_opcode_t opcode) {
  if (status.fault != net_fault_t::peer_crashed) {
    fail("fault is not peer_crashed: " + lci::backend::describe_fault(status));
  }
  if (status.rank != 1) fail("fault names rank " + std::to_string(status.rank));
  if (status.opcode != opcode) {
    fail(std::string("fault opcode ") + lci::backend::get_net_opcode_str(status.opcode));
  }
  if (lci::backend::describe_fault(status).find("rank 1") == std::string::npos) {
    fail("describe_fault does not name rank 1: " + lci::backend::describe_fault(status));
  }
}

}  // namespace

int main() {
  const auto bootstrap = lci::bootstrap::open_bootstrap();
  if (bootstrap->rank_n() != 2) fail("run with 2 ranks");
  lci::backend::ofi::ofi_context_t context(*bootstrap, lci::conformance::provider_from_env());
  std::unique_ptr<net_device_t> device = context.alloc_device({});
  std::vector<char> exposed(64);
  net_mr_t exposed_mr = register_or_fail(*device, exposed.data(), exposed.size());
  const net_rmr_t mine = device->get_rmr(exposed_mr);
  bootstrap->put("dead_peer_rmr", &mine, sizeof(mine));
  bootstrap->fence();
  net_rmr_t peer_rmr;
  std::memcpy(&peer_rmr, bootstrap->get(1 - bootstrap->rank_me(), "dead_peer_rmr").data(),
              sizeof(peer_rmr));
  bootstrap->barrier();
  if (bootstrap->rank_me() == 1) std::_Exit(0);  // "crash": nothing is closed

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  const char text[32] = "are you there?";
  std::size_t sent = 0;
  const net_status_t send_fault = wait_for_fault(*device, deadline, [&] {
    const lci::error_t error =
        device->post_send(1, text, sizeof(text), net_mr_t{}, 0, reinterpret_cast<void*>(1));
    if (!error.is_retry()) ++sent;
  });
  check_crash_fault(send_fault, net_opcode_t::send);
  std::printf("dead peer reported after %zu sends: %s\n", sent,
              lci::backend::describe_fault(send_fault).c_str());

  // Once known dead, RMA to it fails too (at once, or after the provider's
  // own error).
  std::vector<char> local(16, 'x');
  net_mr_t local_mr = register_or_fail(*device, local.data(), local.size());
  bool put_posted = false;
  const net_status_t put_fault = wait_for_fault(*device, deadline, [&] {
    if (put_posted) return;
    put_posted = !device->post_put(1, local.data(), 16, local_mr, 0, peer_rmr, nullptr).is_retry();
  });
  check_crash_fault(put_fault, net_opcode_t::write);
  bool get_posted = false;
  const net_status_t get_fault = wait_for_fault(*device, deadline, [&] {
    if (get_posted) return;
    get_posted = !device->post_get(1, local.data(), 16, local_mr, 0, peer_rmr, nullptr).is_retry();
  });
  check_crash_fault(get_fault, net_opcode_t::read);
  if (std::string(local.data(), 16) != std::string(16, 'x')) fail("a failed get wrote");
  // The network's own report (once for this device), whether or not it came
  // before the faults above.
  for (int polls = 0; g_peer_down_reports == 0 && !past(deadline); ++polls) {
    net_status_t status;
    if (device->poll_comp(&status, 1) == 1 && status.opcode == net_opcode_t::peer_down) {
      ++g_peer_down_reports;
    }
    sched_yield();
  }
  if (g_peer_down_reports != 1) {
    fail("peer_down reports for rank 1: " + std::to_string(g_peer_down_reports));
  }
  std::printf("dead peer reported: %s\n", lci::backend::describe_fault(get_fault).c_str());
  device->deregister_memory(&local_mr);
  device->deregister_memory(&exposed_mr);
  return 0;
}
