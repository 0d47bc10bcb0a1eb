// A peer that dies while other peers keep a device busy must still be
// reported (a server flooded by its clients must hear that one of them
// died). Run under tools/lcirun -n 3 (tests/backends/ofi/BUILD): after a
// barrier rank 1 exits without closing anything (as a crash would leave
// it); rank 2 sends 8-byte messages to rank 0 as fast as the network takes
// them; rank 0 polls slowly (a short sleep between polls), so that every
// poll finds its completion queue full, and waits for the device's
// peer_down report for rank 1. Then rank 0 tells rank 2 to stop (a message
// with immediate data 1) and both exit. Rank 0 prints "dead peer found
// under load: ..." and exits 0; any rank exits 1 on anything else, or when
// nothing was reported within deadline_s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
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
using lci::backend::net_status_t;

constexpr int deadline_s = 30;
constexpr std::size_t batch_max = 16;
constexpr std::size_t message_bytes = 8;
constexpr std::size_t receives_count = 64;
constexpr lci::backend::net_imm_data_t imm_data_flood = 0;
constexpr lci::backend::net_imm_data_t imm_data_stop = 1;

[[noreturn]] void fail(int rank, const std::string& what) {
  std::fprintf(stderr, "FAIL (rank %d): %s\n", rank, what.c_str());
  std::exit(1);
}

bool past(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::steady_clock::now() > deadline;
}

// Receive buffers posted on a device, each posted again as its message is
// handled.
class receives_t {
 public:
  receives_t(net_device_t& device, int rank)
      : device_(device), rank_(rank), buffers_(receives_count * message_bytes) {
    for (std::size_t i = 0; i < receives_count; ++i) post(buffers_.data() + i * message_bytes);
  }
  void post(void* buffer) {
    for (int attempt = 0; attempt < 1000000; ++attempt) {
      if (!device_.post_recv(buffer, message_bytes, net_mr_t{}, nullptr).is_retry()) return;
    }
    fail(rank_, "post_recv refused a million times");
  }

 private:
  net_device_t& device_;
  const int rank_;
  std::vector<char> buffers_;
};

// Rank 0: polls slowly until the device reports rank 1 dead.
int run_server(net_device_t& device) {
  receives_t receives(device, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  std::size_t polls = 0;       // since the first full one
  std::size_t full_polls = 0;  // polls that found a whole batch
  std::size_t arrived = 0;
  net_status_t statuses[batch_max];
  for (bool reported = false; !reported;) {
    if (past(deadline)) {
      fail(0, "no peer_down for rank 1 within " + std::to_string(deadline_s) + " s (" +
                  std::to_string(polls) + " polls, " + std::to_string(full_polls) +
                  " of them full, " + std::to_string(arrived) + " messages from rank 2)");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
    const std::size_t count = device.poll_comp(statuses, batch_max);
    // Counted from the first full batch: before it, rank 2 has not started
    // (tcp also takes a while to connect).
    if (count == batch_max) ++full_polls;
    if (full_polls > 0) ++polls;
    for (std::size_t i = 0; i < count; ++i) {
      const net_status_t& status = statuses[i];
      if (status.opcode == net_opcode_t::peer_down) {
        if (status.rank != 1 || status.fault != net_fault_t::peer_crashed) {
          fail(0, "an unexpected peer_down: " + lci::backend::describe_fault(status));
        }
        reported = true;
        continue;
      }
      if (status.fault != net_fault_t::none) {
        fail(0, "an unexpected fault: " + lci::backend::describe_fault(status));
      }
      if (status.opcode != net_opcode_t::recv || status.rank != 2) {
        fail(0, std::string("an unexpected ") + lci::backend::get_net_opcode_str(status.opcode) +
                    " completion from rank " + std::to_string(status.rank));
      }
      ++arrived;
      receives.post(status.buffer);
    }
  }
  // The test is about a busy device: most polls must have found a full
  // batch (else it measured an idle one, which ofi_dead_peer covers).
  if (full_polls * 4 < polls * 3) {
    fail(0, "the device was not kept busy: " + std::to_string(full_polls) + " of " +
                std::to_string(polls) + " polls found a full batch");
  }
  const char stop[message_bytes] = "stop";
  while (device.post_sends(2, stop, sizeof(stop), imm_data_stop).is_retry()) {
    (void)device.poll_comp(statuses, batch_max);  // drains rank 2's messages meanwhile
  }
  std::printf("dead peer found under load: after %zu polls, %zu of them full, %zu messages\n",
              polls, full_polls, arrived);
  return 0;
}

// Rank 2: sends to rank 0 until rank 0 says stop.
int run_client(net_device_t& device) {
  receives_t receives(device, 2);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s + 10);
  const char message[message_bytes] = "flood";
  net_status_t statuses[batch_max];
  for (std::size_t sent = 0;; ++sent) {
    if (past(deadline)) fail(2, "no stop from rank 0");
    (void)device.post_sends(0, message, sizeof(message), imm_data_flood);
    if (sent % 64 != 0) continue;
    const std::size_t count = device.poll_comp(statuses, batch_max);
    for (std::size_t i = 0; i < count; ++i) {
      const net_status_t& status = statuses[i];
      if (status.opcode == net_opcode_t::peer_down && status.rank == 1) continue;
      if (status.opcode == net_opcode_t::recv && status.rank == 0 &&
          status.imm_data == imm_data_stop) {
        return 0;
      }
      fail(2, "an unexpected completion: " +
                  std::string(lci::backend::get_net_opcode_str(status.opcode)) + " from rank " +
                  std::to_string(status.rank) + ", " + lci::backend::describe_fault(status));
    }
  }
}

}  // namespace

int main() {
  const auto bootstrap = lci::bootstrap::open_bootstrap();
  if (bootstrap->rank_n() != 3) fail(bootstrap->rank_me(), "run with 3 ranks");
  lci::backends::ofi::ofi_context_t context(*bootstrap, lci::conformance::provider_from_env());
  std::unique_ptr<net_device_t> device = context.alloc_device({});
  bootstrap->barrier();
  switch (bootstrap->rank_me()) {
    case 0:
      return run_server(*device);
    case 1:
      std::_Exit(0);  // "crash": nothing is closed
    default:
      return run_client(*device);
  }
}
