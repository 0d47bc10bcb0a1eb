// A peer that dies while other peers keep a device busy must still be
// reported (a server flooded by its clients must hear that one of them
// died). Run under tools/lcirun -n 3 (tests/backends/ofi/BUILD): rank 2
// keeps window messages of 8 bytes in flight to rank 0, which returns a
// credit (immediate data imm_data_credit) for each credit_batch it takes;
// rank 0 polls slowly (a sleep between polls), so that every poll finds its
// completion queue full. Once flood_confirm_polls polls in a row were full,
// rank 0 tells rank 1 to exit (imm_data_exit), and rank 1 exits without
// closing anything (as a crash would leave it); rank 0 waits for the
// device's peer_down report for rank 1, then tells rank 2 to stop
// (imm_data_stop). Rank 0 prints "dead peer found under load: ..." and
// exits 0; any rank exits 1 on anything else, or when nothing was reported
// within deadline_s.
//
// The flood must fill the polls after the death, or the test measured an
// idle device (which ofi_dead_peer covers). On a loaded machine (tests run
// side by side on 2 cores) rank 2 may get the processor too seldom to fill
// polls 20 us apart: rank 0 doubles its sleep after each poll that was not
// full, up to sleep_max, so that a slowed flood still fills them. The
// window bounds what waits at rank 0 however long it sleeps (an unbounded
// flood over tcp piles up in the provider until each poll takes tens of
// milliseconds).
#include <algorithm>
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
constexpr std::size_t window = 1024;
constexpr std::size_t credit_batch = 16;
constexpr std::size_t flood_confirm_polls = 32;
constexpr std::chrono::microseconds sleep_min{20};
constexpr std::chrono::microseconds sleep_max{1000};
constexpr lci::backend::net_imm_data_t imm_data_flood = 0;
constexpr lci::backend::net_imm_data_t imm_data_stop = 1;
constexpr lci::backend::net_imm_data_t imm_data_exit = 2;
constexpr lci::backend::net_imm_data_t imm_data_credit = 3;

[[noreturn]] void fail(int rank, const std::string& what) {
  std::fprintf(stderr, "FAIL (rank %d): %s\n", rank, what.c_str());
  std::exit(1);
}

bool past(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::steady_clock::now() > deadline;
}

std::chrono::steady_clock::time_point deadline_from_now(int seconds) {
  return std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
}

std::string describe(const net_status_t& status) {
  return std::string(lci::backend::get_net_opcode_str(status.opcode)) + " from rank " +
         std::to_string(status.rank) + ", " + lci::backend::describe_fault(status);
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

// Posts an 8-byte inject carrying `imm_data`; false when the device asked
// to retry.
bool post_word(net_device_t& device, int rank, lci::backend::net_imm_data_t imm_data) {
  const char word[message_bytes] = "word";
  return !device.post_sends(rank, word, sizeof(word), imm_data).is_retry();
}

// Rank 0: polls slowly while rank 2 floods it; tells rank 1 to exit once the
// flood fills its polls, then polls until the device reports rank 1 dead.
int run_server(net_device_t& device) {
  receives_t receives(device, 0);
  const auto deadline = deadline_from_now(deadline_s);
  auto sleep = sleep_min;
  std::size_t full_in_a_row = 0;
  bool exit_sent = false;
  std::size_t polls = 0;       // since rank 1 was told to exit
  std::size_t full_polls = 0;  // of those, polls that found a whole batch
  std::size_t arrived = 0;
  std::size_t credits_owed = 0;  // messages taken and not yet credited
  net_status_t statuses[batch_max];
  for (bool reported = false; !reported;) {
    if (past(deadline)) {
      fail(0, "no peer_down for rank 1 within " + std::to_string(deadline_s) + " s (" +
                  (exit_sent ? "" : "rank 1 not yet told to exit; ") + std::to_string(polls) +
                  " polls, " + std::to_string(full_polls) + " of them full, " +
                  std::to_string(arrived) + " messages from rank 2)");
    }
    std::this_thread::sleep_for(sleep);
    const std::size_t count = device.poll_comp(statuses, batch_max);
    const bool full = count == batch_max;
    full_in_a_row = full ? full_in_a_row + 1 : 0;
    if (!full) sleep = std::min(sleep * 2, sleep_max);
    if (exit_sent) {
      ++polls;
      if (full) ++full_polls;
    }
    for (std::size_t i = 0; i < count; ++i) {
      const net_status_t& status = statuses[i];
      if (status.opcode == net_opcode_t::peer_down) {
        if (!exit_sent || status.rank != 1 || status.fault != net_fault_t::peer_crashed) {
          fail(0, "an unexpected peer_down: " + describe(status));
        }
        reported = true;
        continue;
      }
      // The exit word is an inject: a completion for it reports a fault
      // (rank 1 may exit before its delivery was acknowledged).
      if (status.opcode == net_opcode_t::send && status.rank == 1 &&
          status.fault == net_fault_t::peer_crashed) {
        continue;
      }
      if (status.fault != net_fault_t::none || status.opcode != net_opcode_t::recv ||
          status.rank != 2) {
        fail(0, "an unexpected completion: " + describe(status));
      }
      ++arrived;
      ++credits_owed;
      receives.post(status.buffer);
    }
    while (credits_owed >= credit_batch && post_word(device, 2, imm_data_credit)) {
      credits_owed -= credit_batch;
    }
    if (!exit_sent && full_in_a_row >= flood_confirm_polls) {
      exit_sent = post_word(device, 1, imm_data_exit);
    }
  }
  // Most polls after the death must have found a full batch.
  if (full_polls * 4 < polls * 3) {
    fail(0, "the device was not kept busy: " + std::to_string(full_polls) + " of " +
                std::to_string(polls) + " polls found a full batch");
  }
  while (!post_word(device, 2, imm_data_stop)) {
    (void)device.poll_comp(statuses, batch_max);  // lets the device make room
  }
  std::printf(
      "dead peer found under load: after %zu polls, %zu of them full, %zu messages, "
      "%lld us between polls\n",
      polls, full_polls, arrived, static_cast<long long>(sleep.count()));
  return 0;
}

// Rank 1: waits for rank 0's word, then exits as a crash would.
[[noreturn]] void run_victim(net_device_t& device) {
  receives_t receives(device, 1);
  const auto deadline = deadline_from_now(deadline_s);
  net_status_t status;
  while (!past(deadline)) {
    if (device.poll_comp(&status, 1) == 0) continue;
    if (status.opcode == net_opcode_t::recv && status.rank == 0 &&
        status.imm_data == imm_data_exit) {
      std::_Exit(0);  // "crash": nothing is closed
    }
    fail(1, "an unexpected completion: " + describe(status));
  }
  fail(1, "no word to exit from rank 0");
}

// Rank 2: keeps `window` messages in flight to rank 0 until rank 0 says stop.
int run_client(net_device_t& device) {
  receives_t receives(device, 2);
  const auto deadline = deadline_from_now(deadline_s + 10);
  std::size_t in_flight = 0;  // sent and not yet credited
  net_status_t statuses[batch_max];
  for (;;) {
    if (past(deadline)) fail(2, "no stop from rank 0");
    while (in_flight < window && post_word(device, 0, imm_data_flood)) ++in_flight;
    const std::size_t count = device.poll_comp(statuses, batch_max);
    for (std::size_t i = 0; i < count; ++i) {
      const net_status_t& status = statuses[i];
      if (status.opcode == net_opcode_t::peer_down && status.rank == 1) continue;
      // Rank 0 exits once it has posted the stop, which may reach this
      // device after a message's failure: rank 0's own exit status is the
      // verdict.
      if (status.rank == 0 && status.fault == net_fault_t::peer_crashed) return 0;
      if (status.opcode != net_opcode_t::recv || status.rank != 0 ||
          status.fault != net_fault_t::none) {
        fail(2, "an unexpected completion: " + describe(status));
      }
      if (status.imm_data == imm_data_stop) return 0;
      if (status.imm_data != imm_data_credit || in_flight < credit_batch) {
        fail(2, "an unexpected message from rank 0: " + std::to_string(status.imm_data));
      }
      in_flight -= credit_batch;
      receives.post(status.buffer);
    }
  }
}

}  // namespace

int main() {
  const auto bootstrap = lci::bootstrap::open_bootstrap();
  if (bootstrap->rank_n() != 3) fail(bootstrap->rank_me(), "run with 3 ranks");
  lci::backend::ofi::ofi_context_t context(*bootstrap, lci::conformance::provider_from_env());
  std::unique_ptr<net_device_t> device = context.alloc_device({});
  bootstrap->barrier();
  switch (bootstrap->rank_me()) {
    case 0:
      return run_server(*device);
    case 1:
      run_victim(*device);
    default:
      return run_client(*device);
  }
}
