// What the conformance suite leaves out of the shm device, as real
// processes under tools/lcirun (tests/backends/shm/BUILD). Modes (the first
// argument):
//   fragments  every rank sends `messages_n` messages with post_send to the
//              next rank, of sizes up to fragment_bytes (most above the slot
//              payload, so through fragments, more at once than a pool
//              holds), into fewer receive buffers than messages; each
//              arrives once with its bytes, and each send completes once.
//              Prints "rank <r> fragments ok".
//   devices    rounds_n devices in turn (more than a rank holds at once):
//              each round allocates one, sends the next rank a message it
//              receives and one it does not, receives its own, and frees
//              the device. A message must never reach a device of another
//              round. Prints "rank <r> devices ok".
//   dead       2 ranks: rank 1 exits without closing anything; rank 0 sends
//              to it until a send fails with peer_crashed, and checks that
//              the device reported rank 1 dead exactly once. Prints
//              "dead peer reported: <describe_fault>".
// Any other outcome exits 1 with the reason on stderr.
#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.hpp"
#include "backends/shm/shm_device.hpp"
#include "lci/bootstrap/bootstrap.hpp"
#include "lci/bootstrap/locality.hpp"

namespace {

using lci::backend::net_device_t;
using lci::backend::net_fault_t;
using lci::backend::net_mr_t;
using lci::backend::net_opcode_t;
using lci::backend::net_status_t;

constexpr std::size_t messages_n = 300;
constexpr int rounds_n = 20;
constexpr int deadline_s = 30;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "FAIL: %s\n", what.c_str());
  std::exit(1);
}

char pattern_byte(std::size_t seq, std::size_t index) {
  return static_cast<char>((seq * 13 + index * 7 + 1) & 0xff);
}

// Polls one completion at a time until done() or the deadline (one: a
// message behind the awaited one stays in the queue, see run_devices).
template <typename Done, typename OnStatus>
void poll_until(net_device_t& device, Done&& done, OnStatus&& on_status, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) fail(std::string("timed out: ") + what);
    net_status_t status;
    if (device.poll_comp(&status, 1) == 1) {
      on_status(status);
    } else {
      sched_yield();
    }
  }
}

template <typename Post>
void post_retrying(Post&& post, const char* what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
  for (;;) {
    const lci::error_t error = post();
    if (!error.is_retry()) return;
    if (std::chrono::steady_clock::now() > deadline) fail(std::string("retried too long: ") + what);
    sched_yield();  // a full queue drains when its receiver polls
  }
}

int run_fragments(lci::bootstrap::bootstrap_t& bootstrap, net_device_t& device) {
  const int rank = bootstrap.rank_me();
  const int next = (rank + 1) % bootstrap.rank_n();
  const int previous = (rank + bootstrap.rank_n() - 1) % bootstrap.rank_n();
  const std::size_t size_max = lci::backend::shm::fragment_bytes;  // the largest send
  auto size_of = [&](std::size_t seq) { return (seq * 7919 + 1) % (size_max + 1); };
  constexpr std::size_t buffers_n = 4;
  std::vector<std::vector<char>> buffers(buffers_n, std::vector<char>(size_max));
  for (std::vector<char>& buffer : buffers) {
    post_retrying([&] { return device.post_recv(buffer.data(), size_max, {}, &buffer); },
                  "post_recv");
  }
  bootstrap.barrier();
  std::vector<int> received(messages_n, 0);
  std::vector<int> completed(messages_n, 0);
  std::size_t received_n = 0;
  std::size_t completed_n = 0;
  auto on_status = [&](const net_status_t& status) {
    if (status.fault != net_fault_t::none) fail(lci::backend::describe_fault(status));
    const std::size_t seq = status.imm_data;
    if (status.opcode == net_opcode_t::send) {
      const auto index = reinterpret_cast<std::uintptr_t>(status.user_context);
      if (index >= messages_n || completed[index]++ != 0) fail("a send completed twice");
      ++completed_n;
      return;
    }
    if (status.opcode != net_opcode_t::recv || status.rank != previous || seq >= messages_n ||
        status.length != size_of(seq) || received[seq]++ != 0) {
      fail("an unexpected receive: seq " + std::to_string(seq) + " length " +
           std::to_string(status.length));
    }
    const char* bytes = static_cast<const char*>(status.buffer);
    for (std::size_t i = 0; i < status.length; ++i) {
      if (bytes[i] != pattern_byte(seq, i)) fail("message " + std::to_string(seq) + " corrupt");
    }
    ++received_n;
    auto* buffer = static_cast<std::vector<char>*>(status.user_context);
    if (device.post_recv(buffer->data(), size_max, {}, buffer).is_retry()) fail("repost refused");
  };
  std::vector<char> source(size_max);
  for (std::size_t seq = 0; seq < messages_n; ++seq) {
    for (std::size_t i = 0; i < size_of(seq); ++i) source[i] = pattern_byte(seq, i);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(deadline_s);
    while (device
               .post_send(next, source.data(), size_of(seq), {},
                          static_cast<lci::backend::net_imm_data_t>(seq),
                          reinterpret_cast<void*>(seq))
               .is_retry()) {
      if (std::chrono::steady_clock::now() > deadline) fail("post_send retried too long");
      net_status_t statuses[8];
      const std::size_t count = device.poll_comp(statuses, 8);
      for (std::size_t i = 0; i < count; ++i) on_status(statuses[i]);
      sched_yield();
    }
    // The buffer is the caller's again once post_send returned: scribble.
    std::memset(source.data(), 0x5a, size_of(seq));
  }
  poll_until(device, [&] { return received_n == messages_n && completed_n == messages_n; },
             on_status, "every message and completion");
  bootstrap.barrier();
  std::printf("rank %d fragments ok\n", rank);
  return 0;
}

int run_devices(lci::bootstrap::bootstrap_t& bootstrap, lci::backend::net_context_t& context) {
  const int rank = bootstrap.rank_me();
  const int next = (rank + 1) % bootstrap.rank_n();
  for (int round = 0; round < rounds_n; ++round) {
    std::unique_ptr<net_device_t> device = context.alloc_device({});
    char buffer[64];
    post_retrying([&] { return device->post_recv(buffer, sizeof(buffer), {}, nullptr); },
                  "post_recv");
    // The second one is never received: it stays in the queue behind the
    // first, and the next device of the slot must drop it.
    for (const lci::backend::net_imm_data_t imm : {0u, 1u}) {
      const lci::backend::net_imm_data_t tagged = static_cast<unsigned>(round) << 1 | imm;
      post_retrying([&] { return device->post_sends(next, "x", 1, tagged); },
                    "post_sends");
    }
    bool received = false;
    poll_until(*device, [&] { return received; },
               [&](const net_status_t& status) {
                 if (status.opcode != net_opcode_t::recv ||
                     status.imm_data >> 1 != static_cast<unsigned>(round)) {
                   fail("round " + std::to_string(round) + " received imm " +
                        std::to_string(status.imm_data));
                 }
                 received = true;
               },
               "this round's message");
  }
  bootstrap.barrier();
  std::printf("rank %d devices ok\n", rank);
  return 0;
}

int run_dead(lci::bootstrap::bootstrap_t& bootstrap, net_device_t& device) {
  if (bootstrap.rank_n() != 2) fail("run dead with 2 ranks");
  bootstrap.barrier();
  if (bootstrap.rank_me() == 1) std::_Exit(0);  // "crash": nothing is closed
  int reports = 0;
  bool faulted = false;
  net_status_t fault;
  const char text[300] = "are you there?";  // a fragment: both paths run
  auto on_status = [&](const net_status_t& status) {
    if (status.opcode == net_opcode_t::peer_down) {
      if (status.rank != 1 || status.fault != net_fault_t::peer_crashed) fail("bad peer_down");
      ++reports;
    } else if (status.fault != net_fault_t::none) {
      if (status.fault != net_fault_t::peer_crashed || status.rank != 1) {
        fail("unexpected fault: " + lci::backend::describe_fault(status));
      }
      faulted = true;
      fault = status;
    }
  };
  poll_until(device,
             [&] {
               (void)device.post_send(1, text, sizeof(text), {}, 0, nullptr);
               (void)device.post_sends(1, text, 8, 0);
               return faulted && reports > 0;
             },
             on_status, "the dead peer's report");
  // More polls: a second report would show now.
  for (int i = 0; i < 1000; ++i) {
    net_status_t status;
    if (device.poll_comp(&status, 1) == 1) on_status(status);
    sched_yield();
  }
  if (reports != 1) fail("peer_down reports: " + std::to_string(reports));
  std::printf("dead peer reported: %s\n", lci::backend::describe_fault(fault).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) fail("usage: shm_device_check fragments|devices|dead");
  const std::string mode = argv[1];
  const auto bootstrap = lci::bootstrap::open_bootstrap();
  const lci::bootstrap::locality_t locality = lci::bootstrap::exchange_locality(*bootstrap);
  lci::backend::shm::shm_context_t context(*bootstrap, locality);
  if (mode == "devices") return run_devices(*bootstrap, context);
  std::unique_ptr<net_device_t> device = context.alloc_device({});
  if (mode == "fragments") return run_fragments(*bootstrap, *device);
  if (mode == "dead") return run_dead(*bootstrap, *device);
  fail("unknown mode " + mode);
}
