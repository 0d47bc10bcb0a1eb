// Unit tests of pool_t: exhaustion, distinct/aligned/writable packets,
// steal-half and failed steals, the remote-put return policy, and the
// always-on misuse checks (double put, foreign pointer, packets still out).
#include "lci/packet_pool/packet_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "lci/util/cache.hpp"
#include "lci/util/thread_context.hpp"

namespace {

using lci::packet_pool::pool_t;

// Enough deques that the few threads of one test never share one.
constexpr std::size_t deques_count_many = pool_t::deques_count_limit;

std::vector<void*> get_all(pool_t& pool, std::size_t count) {
  std::vector<void*> packets;
  for (std::size_t i = 0; i < count; ++i) {
    void* packet = pool.get();
    EXPECT_NE(packet, nullptr) << "get " << i << " of " << count;
    if (packet != nullptr) packets.push_back(packet);
  }
  return packets;
}

void put_all(pool_t& pool, std::vector<void*>& packets) {
  for (void* packet : packets) pool.put(packet);
  packets.clear();
}

// Runs fn on a new thread (another thread index than the caller's, hence
// another deque) and joins. Two calls in a row may run on the same index:
// an exited thread's goes to the next new thread (util/thread_context.hpp).
template <typename Fn>
void on_other_thread(Fn fn) {
  std::thread thread(fn);
  thread.join();
}

// Runs fn on a new thread that then stays alive, keeping its thread index
// (and so its deque) from later threads, until destroyed.
class held_thread_t {
 public:
  template <typename Fn>
  explicit held_thread_t(Fn fn)
      : thread_([this, fn] {
          fn();
          std::unique_lock<std::mutex> lock(mutex_);
          ran_ = true;
          changed_.notify_all();
          changed_.wait(lock, [this] { return released_; });
        }) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return ran_; });
  }
  ~held_thread_t() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      released_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  held_thread_t(const held_thread_t&) = delete;
  held_thread_t& operator=(const held_thread_t&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool ran_ = false;
  bool released_ = false;
  std::thread thread_;  // last: starts once the members it uses exist
};

TEST(PacketPool, GetReturnsNullptrExactlyAfterPacketsCount) {
  constexpr std::size_t packets_count = 37;
  pool_t pool(100, packets_count);
  EXPECT_EQ(pool.packets_count(), packets_count);
  EXPECT_EQ(pool.packet_size_bytes(), 100u);
  EXPECT_EQ(pool.packets_free_count(), packets_count);
  for (int round = 0; round < 2; ++round) {  // put back, then get again
    std::vector<void*> packets = get_all(pool, packets_count);
    ASSERT_EQ(packets.size(), packets_count);
    EXPECT_EQ(pool.packets_free_count(), 0u);
    EXPECT_EQ(pool.get(), nullptr);
    EXPECT_EQ(pool.get(), nullptr);  // stays empty, no phantom packet
    pool.put(packets.back());
    packets.pop_back();
    EXPECT_EQ(pool.packets_free_count(), 1u);
    void* again = pool.get();
    EXPECT_NE(again, nullptr);
    packets.push_back(again);
    EXPECT_EQ(pool.get(), nullptr);
    put_all(pool, packets);
    EXPECT_EQ(pool.packets_free_count(), packets_count);
  }
}

// The limits are inclusive: a pool of one packet of exactly
// packet_size_bytes_max (1 GiB) is accepted and usable end to end. Only the
// pages of its first and last bytes (and the header's) are touched, so the
// test costs address space, not memory.
TEST(PacketPool, PacketOfTheLargestSizeIsAccepted) {
  pool_t pool(pool_t::packet_size_bytes_max, 1);
  EXPECT_EQ(pool.packet_size_bytes(), pool_t::packet_size_bytes_max);
  auto* packet = static_cast<char*>(pool.get());
  ASSERT_NE(packet, nullptr);
  packet[0] = 1;
  packet[pool_t::packet_size_bytes_max - 1] = 2;
  EXPECT_EQ(pool.get(), nullptr);
  pool.put(packet);
  EXPECT_EQ(pool.packets_free_count(), 1u);
}

TEST(PacketPool, PacketsAreDistinctAlignedOwnedAndWritable) {
  constexpr std::size_t packets_count = 50;
  constexpr std::size_t size_bytes = 100;  // not a multiple of a line
  pool_t pool(size_bytes, packets_count);
  std::vector<void*> packets = get_all(pool, packets_count);
  ASSERT_EQ(packets.size(), packets_count);
  std::set<void*> distinct(packets.begin(), packets.end());
  EXPECT_EQ(distinct.size(), packets_count);
  for (std::size_t i = 0; i < packets.size(); ++i) {
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(packets[i]) % lci::util::cache_line_bytes, 0u);
    EXPECT_TRUE(pool.owns(packets[i]));
    std::memset(packets[i], static_cast<int>(i + 1), size_bytes);
  }
  // Written all first, checked after: overlapping packets would clobber.
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const auto* bytes = static_cast<const unsigned char*>(packets[i]);
    for (std::size_t b = 0; b < size_bytes; ++b) {
      ASSERT_EQ(bytes[b], static_cast<unsigned char>(i + 1)) << "packet " << i << " byte " << b;
    }
  }
  // Consecutive packets are at least header + payload apart.
  std::vector<std::uintptr_t> addresses;
  for (void* packet : packets) addresses.push_back(reinterpret_cast<std::uintptr_t>(packet));
  std::sort(addresses.begin(), addresses.end());
  for (std::size_t i = 1; i < addresses.size(); ++i) {
    EXPECT_GE(addresses[i] - addresses[i - 1],
              size_bytes + lci::packet_pool::packet_header_bytes);
  }
  put_all(pool, packets);
}

TEST(PacketPool, OwnsOnlyPayloadStarts) {
  pool_t pool(64, 4);
  pool_t other(64, 4);
  void* packet = pool.get();
  void* foreign = other.get();
  ASSERT_NE(packet, nullptr);
  ASSERT_NE(foreign, nullptr);
  int on_stack = 0;
  EXPECT_TRUE(pool.owns(packet));
  EXPECT_FALSE(pool.owns(nullptr));
  EXPECT_FALSE(pool.owns(&on_stack));
  EXPECT_FALSE(pool.owns(foreign));
  EXPECT_FALSE(pool.owns(static_cast<char*>(packet) + 1));
  EXPECT_FALSE(pool.owns(static_cast<char*>(packet) + lci::util::cache_line_bytes));
  EXPECT_FALSE(pool.owns(static_cast<char*>(packet) - lci::packet_pool::packet_header_bytes));
  pool.put(packet);
  other.put(foreign);
}

// payload_containing maps every byte of a packet's payload to that payload
// and every header or padding byte to nullptr, for strides that are powers
// of two and strides that are not (it takes the address's offset modulo
// the stride): checked byte by byte against the layout.
TEST(PacketPool, PayloadContainingFindsEveryPayloadByte) {
  for (const std::size_t packet_size : {std::size_t{64}, std::size_t{100}, std::size_t{960},
                                        std::size_t{8192}, std::size_t{8256}}) {
    constexpr std::size_t packets_count = 9;
    pool_t pool(packet_size, packets_count);
    std::vector<void*> packets;
    while (void* packet = pool.get()) packets.push_back(packet);
    ASSERT_EQ(packets.size(), packets_count);
    std::sort(packets.begin(), packets.end());
    const auto* first = static_cast<const char*>(packets.front());
    const auto* last = static_cast<const char*>(packets.back());
    std::size_t payload_bytes = 0;
    for (const char* at = first - lci::packet_pool::packet_header_bytes;
         at < last + packet_size + lci::util::cache_line_bytes; ++at) {
      void* expected = nullptr;
      for (void* packet : packets) {
        const auto* begin = static_cast<const char*>(packet);
        if (at >= begin && at < begin + packet_size) expected = packet;
      }
      payload_bytes += expected != nullptr;
      ASSERT_EQ(pool.payload_containing(at), expected)
          << "packet size " << packet_size << ", byte " << (at - first) << " after the first payload";
    }
    EXPECT_EQ(payload_bytes, packet_size * packets_count);
    put_all(pool, packets);
  }
}

TEST(PacketPool, StealFromEmptyVictimFails) {
  constexpr std::size_t packets_count = 8;
  pool_t pool(64, packets_count, deques_count_many);
  std::vector<void*> packets = get_all(pool, packets_count);  // our deque is empty
  void* stolen = reinterpret_cast<void*>(1);
  std::size_t thief_deque = 0;
  on_other_thread([&] {
    thief_deque = pool.deque_index_of_this_thread();
    stolen = pool.get();  // the only other active deque (ours) is empty
  });
  ASSERT_NE(thief_deque, pool.deque_index_of_this_thread());
  EXPECT_EQ(stolen, nullptr);
  EXPECT_EQ(pool.deque_packets_count(thief_deque), 0u);
  put_all(pool, packets);
  EXPECT_EQ(pool.packets_free_count(), packets_count);
}

TEST(PacketPool, SingleDequeNeverSteals) {
  pool_t pool(64, 2, 1);  // every thread shares deque 0
  void* first = pool.get();
  void* second = nullptr;
  void* third = reinterpret_cast<void*>(1);
  on_other_thread([&] {
    second = pool.get();
    third = pool.get();
  });
  EXPECT_NE(first, nullptr);
  EXPECT_NE(second, nullptr);
  EXPECT_EQ(third, nullptr);
  pool.put(first);
  pool.put(second);
}

// The owner takes everything, puts `returned_count` back; a new thread's get
// then steals half of them (rounded up) from the head and returns one.
class StealHalf : public ::testing::TestWithParam<std::size_t> {};

TEST_P(StealHalf, MovesHalfRoundedUp) {
  constexpr std::size_t packets_count = 16;
  const std::size_t returned_count = GetParam();
  pool_t pool(64, packets_count, deques_count_many);
  std::vector<void*> packets = get_all(pool, packets_count);
  std::vector<void*> returned(packets.end() - returned_count, packets.end());
  packets.resize(packets_count - returned_count);
  put_all(pool, returned);
  const std::size_t owner_deque = pool.deque_index_of_this_thread();
  ASSERT_EQ(pool.deque_packets_count(owner_deque), returned_count);

  const std::size_t steal_count = (returned_count + 1) / 2;
  std::size_t thief_deque = 0;
  std::size_t thief_count_after_first = 0;
  std::size_t owner_count_after_first = 0;
  std::vector<void*> thief_packets;
  on_other_thread([&] {
    thief_deque = pool.deque_index_of_this_thread();
    thief_packets.push_back(pool.get());
    thief_count_after_first = pool.deque_packets_count(thief_deque);
    owner_count_after_first = pool.deque_packets_count(owner_deque);
    // The stolen packets are now local: no further steal until they are used.
    for (std::size_t i = 1; i < steal_count; ++i) thief_packets.push_back(pool.get());
    EXPECT_EQ(pool.deque_packets_count(owner_deque), returned_count - steal_count);
    for (void* packet : thief_packets) pool.put(packet);
  });
  ASSERT_NE(thief_deque, owner_deque);
  ASSERT_NE(thief_packets.front(), nullptr);
  EXPECT_EQ(thief_count_after_first, steal_count - 1);
  EXPECT_EQ(owner_count_after_first, returned_count - steal_count);
  EXPECT_EQ(pool.deque_packets_count(thief_deque), steal_count);  // put back locally
  put_all(pool, packets);
  EXPECT_EQ(pool.packets_free_count(), packets_count);
}

INSTANTIATE_TEST_SUITE_P(Counts, StealHalf, ::testing::Values(1, 2, 3, 8, 15, 16));

// The policy as documented: after a remote put, a deque over the threshold
// keeps threshold/2 and sends the rest to the packet's home deque.
std::size_t simulate_remote_puts(std::size_t puts_count, std::size_t threshold) {
  std::size_t size = 0;
  for (std::size_t i = 0; i < puts_count; ++i) {
    ++size;
    if (size > threshold) size = threshold / 2;
  }
  return size;
}

class RemotePut : public ::testing::TestWithParam<std::size_t> {};

// A producer thread gets packets (its deque becomes their home), a consumer
// thread puts them: the excess goes back to the producer's deque.
TEST_P(RemotePut, ExcessReturnsToHomeDeque) {
  constexpr std::size_t packets_count = 256;
  constexpr std::size_t sent_count = 100;
  const std::size_t threshold = GetParam();
  pool_t pool(64, packets_count, deques_count_many, threshold);
  EXPECT_EQ(pool.packet_return_threshold(), threshold);
  const std::size_t initial_deque = pool.deque_index_of_this_thread();
  std::vector<void*> sent;
  std::size_t producer_deque = 0;
  std::size_t producer_count_before = 0;
  // Alive until the consumer is done: the consumer gets a deque of its own.
  const held_thread_t producer([&] {
    producer_deque = pool.deque_index_of_this_thread();
    sent = get_all(pool, sent_count);
    producer_count_before = pool.deque_packets_count(producer_deque);
  });
  ASSERT_EQ(sent.size(), sent_count);
  const std::size_t initial_count_before = pool.deque_packets_count(initial_deque);
  std::size_t consumer_deque = 0;
  on_other_thread([&] {
    consumer_deque = pool.deque_index_of_this_thread();
    put_all(pool, sent);
  });
  ASSERT_NE(producer_deque, initial_deque);
  ASSERT_NE(consumer_deque, producer_deque);
  ASSERT_NE(consumer_deque, initial_deque);
  const std::size_t kept_count = simulate_remote_puts(sent_count, threshold);
  EXPECT_EQ(pool.deque_packets_count(consumer_deque), kept_count);
  EXPECT_LE(kept_count, std::max(threshold, std::size_t{1}));
  EXPECT_EQ(pool.deque_packets_count(producer_deque),
            producer_count_before + sent_count - kept_count);
  EXPECT_EQ(pool.deque_packets_count(initial_deque), initial_count_before);
  EXPECT_EQ(pool.packets_free_count(), packets_count);
}

// 0: every remote put returns everything; 1000: the policy never triggers.
INSTANTIATE_TEST_SUITE_P(Thresholds, RemotePut, ::testing::Values(0, 1, 16, 33, 1000));

// Puts of packets the putting thread got itself are local: never moved, even
// far over the threshold.
TEST(PacketPool, LocalPutsNeverReturn) {
  constexpr std::size_t packets_count = 256;
  constexpr std::size_t threshold = 8;
  pool_t pool(64, packets_count, deques_count_many, threshold);
  const std::size_t initial_deque = pool.deque_index_of_this_thread();
  on_other_thread([&] {
    const std::size_t own_deque = pool.deque_index_of_this_thread();
    std::vector<void*> packets = get_all(pool, 150);  // steals as it goes
    const std::size_t own_count_before = pool.deque_packets_count(own_deque);
    const std::size_t initial_count_before = pool.deque_packets_count(initial_deque);
    put_all(pool, packets);
    EXPECT_EQ(pool.deque_packets_count(own_deque), own_count_before + 150);
    EXPECT_EQ(pool.deque_packets_count(initial_deque), initial_count_before);
  });
  EXPECT_EQ(pool.packets_free_count(), packets_count);
}

// Teardown's reclaim: every packet still out goes back, none twice; the
// loop visits exactly the pool's packets (under --config=asan a visit past
// the last reads past the block).
TEST(PacketPool, ReclaimOutstandingPutsBackEveryPacketStillOut) {
  constexpr std::size_t packets_count = 5;
  pool_t pool(64, packets_count);
  std::vector<void*> packets = get_all(pool, 3);
  ASSERT_EQ(packets.size(), 3u);
  pool.put(packets[1]);  // back already: not reclaimed again
  EXPECT_EQ(pool.reclaim_outstanding(), 2u);
  EXPECT_EQ(pool.packets_free_count(), packets_count);
  EXPECT_EQ(pool.reclaim_outstanding(), 0u);
}

// A closing device's reclaim: exactly the packets out with its mark go
// back (not another device's, not one unmarked when its arrival was taken,
// not one already home), and each loses its mark.
TEST(PacketPool, ReclaimMarkedPutsBackOnlyThePacketsOutWithTheMark) {
  constexpr std::size_t packets_count = 8;
  pool_t pool(64, packets_count);
  std::vector<void*> packets = get_all(pool, 6);
  ASSERT_EQ(packets.size(), 6u);
  for (std::size_t i = 0; i < 4; ++i) pool.mark_receive(packets[i], 7);
  pool.mark_receive(packets[4], 9);  // another device's receive
  pool.unmark_receive(packets[1]);   // its arrival was taken: the runtime's now
  EXPECT_EQ(pool.reclaim_marked(7), 3u);  // packets 0, 2 and 3
  EXPECT_EQ(pool.packets_free_count(), packets_count - 3);
  EXPECT_EQ(pool.reclaim_marked(7), 0u);  // none twice
  // A reclaimed packet comes out of get() unmarked: a later reclaim of the
  // same mark leaves it with its new holder.
  std::vector<void*> again = get_all(pool, 2);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(pool.reclaim_marked(7), 0u);
  EXPECT_EQ(pool.reclaim_marked(9), 1u);
  for (void* packet : {packets[1], packets[5], again[0], again[1]}) pool.put(packet);
  EXPECT_EQ(pool.packets_free_count(), packets_count);
}

TEST(PacketPoolDeathTest, DoublePutAborts) {
  EXPECT_DEATH(
      {
        pool_t pool(64, 4);
        void* packet = pool.get();
        pool.put(packet);
        pool.put(packet);
      },
      "double put");
}

TEST(PacketPoolDeathTest, ForeignPointerPutAborts) {
  EXPECT_DEATH(
      {
        pool_t pool(64, 4);
        int on_stack = 0;
        pool.put(&on_stack);
      },
      "not a packet of this pool");
  EXPECT_DEATH(
      {
        pool_t pool(64, 4);
        pool_t other(64, 4);
        pool.put(other.get());
      },
      "not a packet of this pool");
}

TEST(PacketPoolDeathTest, InteriorPointerPutAborts) {
  EXPECT_DEATH(
      {
        pool_t pool(256, 4);
        char* packet = static_cast<char*>(pool.get());
        pool.put(packet + 1);
      },
      "not a packet of this pool");
  EXPECT_DEATH(
      {
        pool_t pool(256, 4);
        char* packet = static_cast<char*>(pool.get());
        pool.put(packet + 2 * lci::util::cache_line_bytes);  // aligned, mid-payload
      },
      "not a packet of this pool");
}

// deque_packets_count() takes its index from the caller: the bound is
// exclusive.
TEST(PacketPoolDeathTest, DequeIndexPastTheLastAborts) {
  pool_t pool(64, 4, 2);
  // Every index below the bound is accepted (the packets start in one deque).
  EXPECT_EQ(pool.deque_packets_count(0) + pool.deque_packets_count(1), 4u);
  EXPECT_DEATH((void)pool.deque_packets_count(pool.deques_count_max()),
               "deque index out of range");
}

TEST(PacketPoolDeathTest, DestroyWithPacketOutAborts) {
  EXPECT_DEATH(
      {
        pool_t pool(64, 4);
        void* packet = pool.get();
        static_cast<char*>(packet)[0] = 1;
      },
      "still out");
}

}  // namespace
