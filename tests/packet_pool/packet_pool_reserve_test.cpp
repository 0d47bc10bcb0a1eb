// The packet pool's reserve (pool_t's reserved packets): get() never hands
// a reserved packet out, however many gets run and however the packets were
// put back; get_reserved() hands out only those; put() from any thread
// returns each to the reserve.
//
// The broken variant (LCI_MUTATION=packet_pool_reserve_not_kept, target
// packet_pool_reserve_test_catches_packet_pool_reserve_not_kept) lets a
// reserved packet that another thread puts back into that thread's deque:
// PutFromAnotherThreadKeepsTheReserve then sees get() hand it out. Such a
// pool fails its own teardown check (a reserved packet outside the reserve),
// so in that build the test leaves it undestroyed, held by a global
// (LeakSanitizer reports only what nothing reaches).
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "lci/packet_pool/packet_pool.hpp"
#include "lci/util/cache.hpp"

namespace {

using lci::packet_pool::pool_t;

constexpr std::size_t packet_bytes = 64;
constexpr std::size_t packets_count = 8;
constexpr std::size_t reserved_count = 3;
constexpr std::size_t regular_count = packets_count - reserved_count;

#if defined(LCI_TEST_MUTANT)
pool_t* broken_pool = nullptr;
#endif

// Gets until get() answers nullptr; every packet must be new.
std::vector<void*> drain_with_get(pool_t& pool) {
  std::vector<void*> packets;
  while (void* packet = pool.get()) {
    EXPECT_TRUE(pool.owns(packet));
    packets.push_back(packet);
    EXPECT_LE(packets.size(), packets_count) << "get() handed out a packet twice";
    if (packets.size() > packets_count) break;
  }
  return packets;
}

TEST(PacketPoolReserve, GetNeverHandsOutAReservedPacket) {
#if defined(LCI_TEST_MUTANT)
  GTEST_SKIP() << "broken variant: see PutFromAnotherThreadKeepsTheReserve";
#endif
  pool_t pool(packet_bytes, packets_count, /*deques_count_max=*/4,
              pool_t::packet_return_threshold_default, reserved_count);
  EXPECT_EQ(pool.packets_count(), packets_count);
  EXPECT_EQ(pool.reserved_count(), reserved_count);
  EXPECT_EQ(pool.packets_free_count(), packets_count);
  EXPECT_EQ(pool.reserved_free_count(), reserved_count);

  std::vector<void*> regular = drain_with_get(pool);
  EXPECT_EQ(regular.size(), regular_count);
  EXPECT_EQ(pool.reserved_free_count(), reserved_count);

  std::vector<void*> reserved;
  while (void* packet = pool.get_reserved()) {
    EXPECT_TRUE(pool.owns(packet));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(packet) % lci::util::cache_line_bytes, 0u);
    reserved.push_back(packet);
    if (reserved.size() > reserved_count) break;
  }
  EXPECT_EQ(reserved.size(), reserved_count);
  std::set<void*> distinct(regular.begin(), regular.end());
  distinct.insert(reserved.begin(), reserved.end());
  EXPECT_EQ(distinct.size(), packets_count);
  EXPECT_EQ(pool.packets_free_count(), 0u);

  // Back in any order: each reserved packet to the reserve.
  for (void* packet : reserved) pool.put(packet);
  for (void* packet : regular) pool.put(packet);
  EXPECT_EQ(pool.reserved_free_count(), reserved_count);
  EXPECT_EQ(pool.packets_free_count(), packets_count);
  EXPECT_EQ(drain_with_get(pool).size(), regular_count) << "after the puts";
  // (The pool's destructor checks every packet is home: the drained ones are
  // put back below.)
  for (void* packet : regular) pool.put(packet);
}

// A reserved packet put back by another thread (a receive's arrival freed
// on the thread that processed it) must not reach that thread's deque,
// from which the getting thread would steal it.
TEST(PacketPoolReserve, PutFromAnotherThreadKeepsTheReserve) {
  auto* pool = new pool_t(packet_bytes, packets_count, /*deques_count_max=*/4,
                          pool_t::packet_return_threshold_default, reserved_count);
  std::vector<void*> reserved;
  for (std::size_t i = 0; i < reserved_count; ++i) reserved.push_back(pool->get_reserved());
  std::thread putter([&] {
    for (void* packet : reserved) pool->put(packet);
  });
  putter.join();
  const std::set<void*> reserved_set(reserved.begin(), reserved.end());
  // The putter's deque (a steal victim now) and the own one, drained.
  std::vector<void*> got;
  for (int round = 0; round < 64; ++round) {
    for (void* packet : drain_with_get(*pool)) got.push_back(packet);
  }
  std::size_t reserved_got = 0;
  for (void* packet : got) reserved_got += reserved_set.count(packet);
#if defined(LCI_TEST_MUTANT)
  EXPECT_GT(reserved_got, 0u) << "the broken variant kept the reserve after all";
  broken_pool = pool;  // left undestroyed (see the file comment), but reachable: no leak
#else
  EXPECT_EQ(reserved_got, 0u) << "get() handed out a reserved packet";
  EXPECT_EQ(got.size(), regular_count);
  EXPECT_EQ(pool->reserved_free_count(), reserved_count);
  for (void* packet : got) pool->put(packet);
  delete pool;
#endif
}

TEST(PacketPoolReserve, NoReserveByDefault) {
  pool_t pool(packet_bytes, packets_count);
  EXPECT_EQ(pool.reserved_count(), 0u);
  EXPECT_EQ(pool.get_reserved(), nullptr);
  std::vector<void*> packets = drain_with_get(pool);
  EXPECT_EQ(packets.size(), packets_count);
  for (void* packet : packets) pool.put(packet);
}

}  // namespace
