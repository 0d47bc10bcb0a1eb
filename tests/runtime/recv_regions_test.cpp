// Receive regions (lci/runtime/recv_regions.hpp): arrivals packed into a
// few multi-receive buffers, posted again only once every arrival in them
// is handled. Rank 1 receives zero-copy active messages on a device whose
// packet pool is tiny (so its regions are small and fill up many times over)
// and holds every packet it is given: the messages that arrive meanwhile
// cannot be kept and must wait, holding their regions, which then cannot be
// posted again, so the rest wait in the network. When rank 1 gives its
// packets back, every message must arrive exactly once and intact. A region
// posted again too early lets new arrivals overwrite waiting ones (wrong
// bytes); an arrival dropped for want of a packet never shows up.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_world.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

using lci::runtime_test::post_retrying;
using lci::runtime_test::require;

// 256-byte packets make 8 KiB regions (32 packets each): about 80 of the
// 100-byte messages fill one, so 400 messages cycle the 4 regions.
constexpr std::size_t packet_bytes = 256;
constexpr std::size_t packets_count = 8;
constexpr std::size_t message_bytes = 100;
constexpr int messages_count = 400;
// Rank 1 holds every packet until arrivals wait for one and then this many
// progress calls in a row change nothing: by then the network has delivered
// all it could, and every region is full of arrivals waiting for a packet
// (400 messages are more than 4 regions take). Fewer than the simulator's
// deadlock verdict allows (64 calls of every rank that change nothing), since
// rank 0 is stuck too by then.
constexpr int quiet_polls = 48;

char byte_of(int message, std::size_t offset) {
  return static_cast<char>(message * 7 + static_cast<int>(offset));
}

lci::status_t pop(lci::comp_t cq, lci::device_t device) {
  lci::status_t status;
  do {
    (void)lci::progress_x().device(device)();
    status = lci::cq_pop(cq);
  } while (status.is_retry());
  return status;
}

// Checks one AM (its tag is its index) and counts it; returns its packet.
void check(const lci::status_t& status, std::vector<int>* seen) {
  require(status.is_done() && status.rank == 0 && status.size == message_bytes,
          "an AM with a wrong status (size " + std::to_string(status.size) + ")");
  const int index = static_cast<int>(status.tag);
  require(index >= 0 && index < messages_count, "an AM with tag " + std::to_string(index));
  const auto* bytes = static_cast<const char*>(status.buffer);
  for (std::size_t i = 0; i < message_bytes; ++i) {
    require(bytes[i] == byte_of(index, i),
            "AM " + std::to_string(index) + ": byte " + std::to_string(i) + " is wrong");
  }
  require(++(*seen)[static_cast<std::size_t>(index)] == 1,
          "AM " + std::to_string(index) + " arrived twice");
}

void exchange(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  lci::packet_pool_t pool =
      lci::alloc_packet_pool_x().packet_size(packet_bytes).npackets(packets_count)();
  lci::device_t device = lci::alloc_device_x().packet_pool(pool)();
  lci::comp_t cq = lci::alloc_cq_x().zero_copy_am(true)();
  const lci::rcomp_t rcomp = lci::register_rcomp(cq);
  lci::barrier();
  if (env.rank() == 0) {
    std::vector<char> data(message_bytes);
    for (int m = 0; m < messages_count; ++m) {
      for (std::size_t i = 0; i < message_bytes; ++i) data[i] = byte_of(m, i);
      // COMP_NULL: the payload is the network's (or a copy's) once posted.
      post_retrying([&] {
        return lci::post_am_x(1, data.data(), data.size(), lci::comp_t(), rcomp)
            .tag(static_cast<lci::tag_t>(m))
            .device(device)();
      });
    }
  } else {
    std::vector<int> seen(messages_count, 0);
    std::vector<void*> held;
    while (held.size() < packets_count) {
      const lci::status_t status = pop(cq, device);
      check(status, &seen);
      held.push_back(status.buffer);
    }
    // An arrival that finds no packet waits in the device's backlog, so the
    // device is not drained while one does.
    bool waited = false;
    for (int quiet = 0; !waited || quiet < quiet_polls;) {
      const bool progressed = lci::progress_x().device(device)().is_done();
      require(lci::cq_pop(cq).is_retry(),
              "an AM was delivered while no packet was free to hold it");
      waited = waited || !lci::test_drained_x().device(device)().is_done();
      quiet = progressed ? 0 : quiet + 1;
    }
    require(waited, "no arrival had to wait for a packet (the test holds nothing back)");
    for (void* packet : held) lci::put_upacket(packet);
    for (std::size_t received = held.size(); received < messages_count; ++received) {
      const lci::status_t status = pop(cq, device);
      check(status, &seen);
      lci::put_upacket(status.buffer);
    }
  }
  // Rank 0 progresses its device until its sends are out of the backlog.
  while (!lci::test_drained_x().device(device)().is_done()) {
    (void)lci::progress_x().device(device)();
  }
  lci::barrier();
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&cq);
  lci::free_device(&device);
  lci::free_packet_pool(&pool);
  lci::g_runtime_fina();
}

TEST(RecvRegions, ArrivalsWaitForAPacketAndRegionsForTheirArrivals) {
  LCI_SIM_ONLY("counts on the simulated network delivering while rank 1 holds its packets");
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.concurrent = false;  // the hold phase counts on simulated time
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.log = false;
    options.world.multi_recv = true;
  };
  lci::sim::expect_runs_ok(2, sweep, exchange);
}

}  // namespace
