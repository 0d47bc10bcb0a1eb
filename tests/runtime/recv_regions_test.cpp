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

// Both ranks, at the end: progress until the device's sends are out of its
// backlog, then wait for the peer to be done too.
void drain(lci::device_t device) {
  while (!lci::test_drained_x().device(device)().is_done()) {
    (void)lci::progress_x().device(device)();
  }
  lci::barrier();
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
      }, device);
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
  drain(device);
  lci::deregister_rcomp(rcomp);
  lci::free_comp(&cq);
  lci::free_device(&device);
  lci::free_packet_pool(&pool);
  lci::g_runtime_fina();
}

// Two ranks over receive regions, a few seeds one after another: the
// tests' waiting phases count on simulated time.
void run_over_regions(void (*body)(lci::sim::rank_env_t&)) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  sweep.concurrent = false;
  sweep.configure = [](lci::sim::run_options_t& options) {
    options.log = false;
    options.world.multi_recv = true;
  };
  lci::sim::expect_runs_ok(2, sweep, body);
}

TEST(RecvRegions, ArrivalsWaitForAPacketAndRegionsForTheirArrivals) {
  LCI_SIM_ONLY("counts on the simulated network delivering while rank 1 holds its packets");
  run_over_regions(exchange);
}

// Matching keeps a sender's order for one tag even when an arrival must
// wait for a packet. Rank 1 posts no receive while fillers take every packet
// of its tiny pool as unexpected messages, so the last fillers and then M1
// (tag 7) wait in the device's backlog. Its receive R1 for tag 7 then goes
// into the matching table, and M1 takes it from its region at its next try,
// with no packet (take_posted_receive): R1 completes holding M1 while the
// fillers still hold every packet. M2 (tag 7, sent after a barrier) then
// waits for a packet in turn, and once the fillers are received the next
// receive holds M2.
constexpr lci::tag_t ordered_tag = 7;
constexpr int fillers_count = 12;  // more than the 8 packets
constexpr int first_message = 1000;  // byte patterns of M1 and M2
constexpr int second_message = 1001;

// Posts on `device`, progressing it while the runtime answers retry.
template <typename Post>
lci::status_t post_on(lci::device_t device, Post&& post) {
  lci::status_t status;
  while ((status = post()).is_retry()) (void)lci::progress_x().device(device)();
  return status;
}

// Progresses `device` until `quiet_polls` calls in a row change nothing;
// true when an operation of the device was waiting meanwhile.
bool progress_until_quiet(lci::device_t device, lci::comp_t cq) {
  bool waited = false;
  for (int quiet = 0; quiet < quiet_polls;) {
    const bool progressed = lci::progress_x().device(device)().is_done();
    require(lci::cq_pop(cq).is_retry(), "a receive of tag 7 completed while nothing was posted");
    waited = waited || !lci::test_drained_x().device(device)().is_done();
    quiet = progressed ? 0 : quiet + 1;
  }
  return waited;
}

void check_bytes(const std::vector<char>& bytes, int message, const char* what) {
  for (std::size_t i = 0; i < message_bytes; ++i) {
    require(bytes[i] == byte_of(message, i),
            std::string(what) + " does not hold its message (byte " + std::to_string(i) +
                "): a later message of the same tag overtook it");
  }
}

void ordered_exchange(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  lci::packet_pool_t pool =
      lci::alloc_packet_pool_x().packet_size(packet_bytes).npackets(packets_count)();
  lci::device_t device = lci::alloc_device_x().packet_pool(pool)();
  lci::comp_t cq = lci::alloc_cq();
  lci::barrier();
  std::vector<char> data(message_bytes);
  auto send = [&](lci::tag_t tag, int message) {
    for (std::size_t i = 0; i < message_bytes; ++i) data[i] = byte_of(message, i);
    post_on(device, [&] {
      return lci::post_send_x(1, data.data(), data.size(), tag, lci::comp_t()).device(device)();
    });
  };
  if (env.rank() == 0) {
    for (int f = 0; f < fillers_count; ++f) send(static_cast<lci::tag_t>(100 + f), f);
    send(ordered_tag, first_message);
    lci::barrier();  // rank 1's R1 is in its matching table
    send(ordered_tag, second_message);
  } else {
    std::vector<char> first(message_bytes), second(message_bytes);
    require(progress_until_quiet(device, cq), "no arrival waited for a packet");
    const lci::status_t r1 = post_on(device, [&] {
      return lci::post_recv_x(0, first.data(), first.size(), ordered_tag, cq).device(device)();
    });
    require(r1.is_posted(), "R1 found a message of tag 7 although M1 waited in the backlog");
    lci::status_t done;
    do {
      (void)lci::progress_x().device(device)();
      done = lci::cq_pop(cq);
    } while (done.is_retry());
    require(done.is_done() && done.tag == ordered_tag && done.buffer == first.data(),
            "R1 did not complete");
    check_bytes(first, first_message, "R1");
    lci::barrier();  // M2 is sent now
    require(progress_until_quiet(device, cq), "M2 did not wait for a packet");
    std::vector<std::vector<char>> fillers(fillers_count, std::vector<char>(message_bytes));
    for (int f = 0; f < fillers_count; ++f) {
      const lci::status_t status = post_on(device, [&] {
        return lci::post_recv_x(0, fillers[f].data(), message_bytes,
                                static_cast<lci::tag_t>(100 + f), lci::comp_t())
            .device(device)();
      });
      require(status.is_done(), "a filler was not received at once");
      check_bytes(fillers[f], f, ("filler " + std::to_string(f)).c_str());
    }
    const lci::status_t r2 = post_on(device, [&] {
      return lci::post_recv_x(0, second.data(), second.size(), ordered_tag, lci::comp_t())
          .device(device)();
    });
    require(r2.is_done(), "R2 did not complete");
    check_bytes(second, second_message, "R2");
  }
  drain(device);
  lci::free_comp(&cq);
  lci::free_device(&device);
  lci::free_packet_pool(&pool);
  lci::g_runtime_fina();
}

TEST(RecvRegions, AnArrivalDoesNotOvertakeOnesWaitingForAPacket) {
  LCI_SIM_ONLY("counts on the simulated network delivering while rank 1 receives nothing");
  run_over_regions(ordered_exchange);
}

// A message of exactly a packet's bytes (no header: its tag fits the
// immediate) that lands in a region before its receive is posted is kept in
// a packet whole: the largest arrival arrival_t::keep copies.
void full_packet_exchange(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  lci::packet_pool_t pool =
      lci::alloc_packet_pool_x().packet_size(packet_bytes).npackets(packets_count)();
  lci::device_t device = lci::alloc_device_x().packet_pool(pool)();
  constexpr lci::tag_t tag = 3;
  constexpr int message = 2000;
  std::vector<char> data(packet_bytes, 0);
  lci::comp_t sync = lci::alloc_sync();
  lci::status_t status;
  if (env.rank() == 0) {
    for (std::size_t i = 0; i < packet_bytes; ++i) data[i] = byte_of(message, i);
    status = post_on(device, [&] {
      return lci::post_send_x(1, data.data(), data.size(), tag, sync).device(device)();
    });
    while (status.is_posted() && !lci::sync_test(sync, &status)) {
      (void)lci::progress_x().device(device)();
    }
    require(status.is_done(), "the full packet's send did not complete");
    lci::barrier();
  } else {
    lci::barrier();  // the message has landed in one of rank 1's regions
    for (int quiet = 0; quiet < quiet_polls;) {
      quiet = lci::progress_x().device(device)().is_done() ? 0 : quiet + 1;
    }
    status = post_on(device, [&] {
      return lci::post_recv_x(0, data.data(), data.size(), tag, sync).device(device)();
    });
    require(status.is_done(), "the receive did not find the full packet's message waiting");
    require(status.size == packet_bytes, "the full packet's message arrived with size " +
                                             std::to_string(status.size));
    for (std::size_t i = 0; i < packet_bytes; ++i) {
      require(data[i] == byte_of(message, i),
              "byte " + std::to_string(i) + " of the full packet's message differs");
    }
  }
  lci::free_comp(&sync);
  drain(device);
  lci::free_device(&device);
  lci::free_packet_pool(&pool);
  lci::g_runtime_fina();
}

TEST(RecvRegions, AFullPacketWaitingForItsReceiveIsKeptWhole) {
  LCI_SIM_ONLY("counts on the simulated network's regions");
  run_over_regions(full_packet_exchange);
}

}  // namespace
