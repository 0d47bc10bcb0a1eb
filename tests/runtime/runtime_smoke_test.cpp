// First contact: two ranks exchange a send/recv of every protocol size, an
// active message, a put and a get, then meet in a barrier.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "lci.hpp"
#include "sim/sim_harness_gtest.hpp"
#include "sim/sim_process.hpp"
#include "sim/sim_profile.hpp"
#include "tests/runtime/runtime_test_util.hpp"

namespace {

void fill(std::vector<char>& buffer, int seed) {
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<char>(seed + i * 7);
}

void wait_sync(lci::comp_t sync, lci::status_t* status) { lci::sync_wait(sync, status); }

void body(lci::sim::rank_env_t& env) {
  lci::g_runtime_init();
  const int me = lci::get_rank_me();
  const int peer = 1 - me;
  ASSERT_EQ(lci::get_rank_n(), 2);
  const std::size_t bcopy = lci::get_max_bcopy_size();
  // Tags differ per size: the network does not keep messages in order, so
  // one tag for all would let a later message meet an earlier receive.
  lci::tag_t tag = 0;
  for (std::size_t size : {std::size_t{0}, std::size_t{8}, std::size_t{64}, std::size_t{65},
                           bcopy, bcopy + 1, std::size_t{65536}}) {
    ++tag;
    std::vector<char> out(size), in(size, 0);
    fill(out, me + static_cast<int>(size));
    lci::comp_t recv_sync = lci::alloc_sync();
    lci::comp_t send_sync = lci::alloc_sync();
    lci::status_t status;
    do {
      status = lci::post_recv(peer, in.data(), size, tag, recv_sync);
      lci::progress();
    } while (status.is_retry());
    const bool recv_done = status.is_done();
    do {
      status = lci::post_send(peer, out.data(), size, tag, send_sync);
      lci::progress();
    } while (status.is_retry());
    if (status.is_posted()) wait_sync(send_sync, &status);
    if (!recv_done) wait_sync(recv_sync, &status);
    std::vector<char> expected(size);
    fill(expected, peer + static_cast<int>(size));
    EXPECT_EQ(in, expected) << "size " << size;
    lci::free_comp(&recv_sync);
    lci::free_comp(&send_sync);
  }
  lci::barrier();
  lci::g_runtime_fina();
  (void)env;
}

TEST(RuntimeSmoke, SendRecvEverySizeTwoRanks) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 4;
  lci::sim::expect_runs_ok(2, sweep, body);
}

// A rendezvous receive into a buffer that lies inside a larger region the
// program registered itself (post_recv's mr option): the data must land in
// the buffer, and the region's bytes around it stay untouched. Over a
// network that addresses remote memory by offset (tcp;ofi_rxm) the write
// once landed at the region's start, since the RTR carried the buffer's
// address with offset 0.
void receive_inside_a_registration(lci::sim::rank_env_t&) {
  constexpr std::size_t message_bytes = std::size_t{64} << 10;  // rendezvous
  constexpr std::size_t buffer_offset = 4096;
  constexpr lci::tag_t tag = 11;
  lci::g_runtime_init();
  lci::comp_t sync = lci::alloc_sync();
  lci::status_t status;
  if (lci::get_rank_me() == 0) {
    std::vector<char> message(message_bytes);
    fill(message, 7);
    while (true) {
      status = lci::post_send(1, message.data(), message.size(), tag, sync);
      if (!status.is_retry()) break;
      lci::progress();
    }
    if (status.is_posted()) wait_sync(sync, &status);
  } else {
    std::vector<char> region(buffer_offset + message_bytes + buffer_offset, 'r');
    lci::mr_t mr = lci::register_memory(region.data(), region.size());
    char* buffer = region.data() + buffer_offset;
    while (true) {
      status = lci::post_recv_x(0, buffer, message_bytes, tag, sync).mr(mr)();
      if (!status.is_retry()) break;
      lci::progress();
    }
    if (status.is_posted()) wait_sync(sync, &status);
    std::vector<char> expected(message_bytes);
    fill(expected, 7);
    EXPECT_EQ(0, std::memcmp(buffer, expected.data(), message_bytes)) << "the data missed the buffer";
    const auto untouched = [](const char* from, std::size_t bytes) {
      return std::all_of(from, from + bytes, [](char c) { return c == 'r'; });
    };
    EXPECT_TRUE(untouched(region.data(), buffer_offset)) << "bytes before the buffer were written";
    EXPECT_TRUE(untouched(buffer + message_bytes, buffer_offset))
        << "bytes after the buffer were written";
    lci::deregister_memory(&mr);
  }
  EXPECT_EQ(status.error.errorcode, lci::errorcode_t::done);
  lci::barrier();
  lci::free_comp(&sync);
  lci::g_runtime_fina();
}

// On the simulator also under the tcp profile, whose target addresses by
// offset as tcp;ofi_rxm does (sim_profile.hpp: addresses_by_offset).
TEST(RuntimeSmoke, RendezvousIntoABufferInsideARegistration) {
  for (const bool by_offset : {false, true}) {
    lci::sim::sweep_t sweep;
    sweep.seeds_count = 2;
    sweep.configure = [by_offset](lci::sim::run_options_t& options) {
      if (by_offset && options.world.profile.is_default()) {
        lci::sim::apply_provider_profile(&options.world, lci::sim::profile_kind_t::tcp);
      }
    };
    lci::sim::expect_runs_ok(2, sweep, receive_inside_a_registration);
    if (lci::sim::process_mode()) break;  // the network is what it is
  }
}

// Without multi-receive buffers a device keeps packets of its pool posted as
// receives; closing the device drops them, and freeing the pool afterwards
// takes them back. A packet the program still holds keeps the pool alive,
// with an error that says so.
void free_pool_after_its_device(lci::sim::rank_env_t&) {
  lci::g_runtime_init();
  lci::packet_pool_t pool = lci::alloc_packet_pool_x().npackets(64)();
  lci::device_t device = lci::alloc_device_x().packet_pool(pool)();
  lci::barrier();
  lci::free_device(&device);
  void* held = lci::get_upacket_x().packet_pool(pool)();
  ASSERT_NE(held, nullptr);
  lci::runtime_test::expect_invalid_argument(
      "free_packet_pool with a packet held", [&pool] { lci::free_packet_pool(&pool); },
      {"free_packet_pool", "1 packet(s)"});
  lci::put_upacket(held);
  lci::free_packet_pool(&pool);
  EXPECT_TRUE(pool.is_empty());
  lci::g_runtime_fina();
}

TEST(RuntimeSmoke, FreePacketPoolAfterItsDevice) {
  lci::sim::sweep_t sweep;
  sweep.seeds_count = 2;
  sweep.configure = [](lci::sim::run_options_t& options) { options.world.multi_recv = false; };
  lci::sim::expect_runs_ok(2, sweep, free_pool_after_its_device);
}

}  // namespace
