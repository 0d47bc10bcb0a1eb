// The incast of incast_test.cpp as real processes, at a real process's
// sizes (16384 records for unexpected messages and a backlog ring of 4096
// steps per device, runtime_impl.cpp's sizing_for): every rank but 0 posts
// its sends to rank 0, which only progresses for flood_time and then
// receives them all (matching any message). Two shapes, the program's
// argument:
//   rendezvous (none given)  11,000 sends of 9000 B from each sender: two
//       senders put 22,000 RTSs in front of rank 0, about 5,600 more than
//       its records. Before the backlog could grow, those waited there,
//       more than its ring held, and rank 0's progress threw "device
//       backlog full" here over libfabric shm; once it could, draining
//       them took seconds, each receive paying a try of every RTS still
//       waiting. Rank 0 now allocates records past its pool
//       (docs/design/device.md, "Pools").
//   eager  15,000 sends of 1000 B from each sender, for a device with
//       receive regions (LCI_OFI_MULTI_RECV=1): over shm, the messages the
//       provider holds unmatched while the regions wait fill its receive
//       entries, and it refuses a region until receives take them. Rank 0
//       threw "fi_recvmsg: Cannot allocate memory" here before; it now
//       posts packets meanwhile (device_receives_t::replenish_regions).
// Run as N >= 3 real processes under tools/lcirun (tests/runtime/BUILD).
// Rank 0 prints "rank 0: received <count>"; every rank prints "rank <r>:
// left cleanly" after g_runtime_fina, or "rank <r>: error: <what>" and
// exits 1.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "lci.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

struct flood_t {
  int sends_per_sender;
  std::size_t message_bytes;
};
// Above the packet size (8 KiB): each send is an RTS, then a write.
constexpr flood_t rendezvous_flood{11000, 9000};
// Eager, about 260 to a receive region of 32 packets.
constexpr flood_t eager_flood{15000, 1000};
// Long enough for the senders to post every send the network takes.
constexpr auto flood_time = std::chrono::seconds(3);

void send_all(const flood_t& flood, lci::comp_t counter) {
  // One buffer for every send: they all carry the same bytes.
  std::vector<char> bytes(flood.message_bytes, static_cast<char>(lci::get_rank_me()));
  for (int m = 0; m < flood.sends_per_sender; ++m) {
    const lci::status_t status = post_retrying([&] {
      return lci::post_send_x(0, bytes.data(), bytes.size(), 0, counter)
          .matching_policy(lci::matching_policy_t::none)
          .allow_done(false)();  // the counter counts every send
    });
    require(status.is_posted(), "a send was not posted");
  }
  while (lci::counter_get(counter) < flood.sends_per_sender) (void)lci::progress();
}

void receive_all(const flood_t& flood) {
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < flood_time) (void)lci::progress();
  const int total = flood.sends_per_sender * (lci::get_rank_n() - 1);
  std::vector<int> from(static_cast<std::size_t>(lci::get_rank_n()), 0);
  std::vector<char> buffer(flood.message_bytes);
  for (int received = 0; received < total; ++received) {
    lci::comp_t sync = lci::alloc_sync();
    lci::status_t status = post_retrying([&] {
      return lci::post_recv_x(1, buffer.data(), buffer.size(), 0, sync)
          .matching_policy(lci::matching_policy_t::none)();
    });
    if (status.is_posted()) {
      while (!lci::sync_test(sync, &status)) (void)lci::progress();
    }
    lci::free_comp(&sync);
    require(status.is_done() && status.rank >= 1 && status.rank < lci::get_rank_n() &&
                status.size == flood.message_bytes,
            "receive " + std::to_string(received) + " ended with a wrong status");
    require(buffer.front() == static_cast<char>(status.rank) &&
                buffer.back() == static_cast<char>(status.rank),
            "receive " + std::to_string(received) + " holds another rank's bytes");
    ++from[static_cast<std::size_t>(status.rank)];
  }
  for (int rank = 1; rank < lci::get_rank_n(); ++rank) {
    require(from[static_cast<std::size_t>(rank)] == flood.sends_per_sender,
            "rank " + std::to_string(rank) + "'s sends were not all received");
  }
  std::printf("rank 0: received %d\n", total);
}

// *rank: this rank, asked before g_runtime_fina (after it there is no
// runtime to ask).
void run(const flood_t& flood, int* rank) {
  lci::g_runtime_init();
  *rank = lci::get_rank_me();
  require(lci::get_rank_n() >= 3, "incast_flood needs at least 3 ranks");
  lci::comp_t counter = lci::alloc_counter();
  lci::barrier();
  if (lci::get_rank_me() == 0) {
    receive_all(flood);
  } else {
    send_all(flood, counter);
  }
  lci::barrier();
  lci::free_comp(&counter);
  lci::g_runtime_fina();
}

}  // namespace

int main(int argc, char** argv) {
  int rank = -1;
  try {
    const bool eager = argc > 1 && std::strcmp(argv[1], "eager") == 0;
    require(argc == 1 || eager, "usage: incast_flood [eager]");
    run(eager ? eager_flood : rendezvous_flood, &rank);
  } catch (const std::exception& error) {
    std::printf("rank %d: error: %s\n", rank, error.what());
    return 1;
  }
  std::printf("rank %d: left cleanly\n", rank);
  return 0;
}
