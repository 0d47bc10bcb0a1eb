// Multithreaded stress of pool_t: threads get, put and hand packets to each
// other for a bounded time. Every handout is checked against a side table
// (a packet held twice is a duplicate handout) and against a tag written into
// the whole payload while held; at the end every packet is home exactly once.
#include "lci/packet_pool/packet_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace {

using lci::packet_pool::pool_t;

#if defined(__SANITIZE_THREAD__)
constexpr bool under_tsan = true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
constexpr bool under_tsan = true;
#else
constexpr bool under_tsan = false;
#endif
#else
constexpr bool under_tsan = false;
#endif

constexpr auto run_duration = std::chrono::milliseconds(under_tsan ? 1500 : 700);
constexpr long operations_per_thread_max = under_tsan ? 200000 : 5000000;
constexpr std::size_t size_bytes = 200;

// Shared state the threads race on, on the heap. The side table is indexed by
// packet: the addresses are learned once, before the threads start.
struct world_t {
  world_t(std::size_t packets_count, std::size_t deques_count_max, std::size_t threshold)
      : pool(size_bytes, packets_count, deques_count_max, threshold),
        holders(std::make_unique<std::atomic<int>[]>(packets_count)) {
    std::vector<void*> all;
    for (std::size_t i = 0; i < packets_count; ++i) all.push_back(pool.get());
    for (void* packet : all) EXPECT_NE(packet, nullptr);
    EXPECT_EQ(pool.get(), nullptr);
    addresses = all;
    std::sort(addresses.begin(), addresses.end());
    for (void* packet : all) pool.put(packet);
    for (std::size_t i = 0; i < packets_count; ++i) holders[i].store(0);
  }

  std::size_t index_of(void* packet) const {
    auto it = std::lower_bound(addresses.begin(), addresses.end(), packet);
    EXPECT_TRUE(it != addresses.end() && *it == packet) << "unknown packet " << packet;
    return static_cast<std::size_t>(it - addresses.begin());
  }

  // Called right after get() or after taking a packet from the hand-off queue.
  void take(void* packet, int tag) {
    const std::size_t index = index_of(packet);
    const int previous = holders[index].exchange(tag);
    EXPECT_EQ(previous, 0) << "packet " << index << " held by " << previous
                           << " and handed to " << tag;
    std::memset(packet, tag, size_bytes);
  }

  // Called right before put() or before handing the packet to the queue.
  void release(void* packet, int tag) {
    const auto* bytes = static_cast<const unsigned char*>(packet);
    for (std::size_t b = 0; b < size_bytes; b += 37) {
      ASSERT_EQ(bytes[b], static_cast<unsigned char>(tag)) << "payload overwritten while held";
    }
    const int previous = holders[index_of(packet)].exchange(0);
    EXPECT_EQ(previous, tag) << "released a packet held by another thread";
  }

  void hand_off(void* packet) {
    std::lock_guard<std::mutex> guard(queue_lock);
    queue.push_back(packet);
  }
  void* take_hand_off() {
    std::lock_guard<std::mutex> guard(queue_lock);
    if (queue.empty()) return nullptr;
    void* packet = queue.front();
    queue.pop_front();
    return packet;
  }

  pool_t pool;
  std::vector<void*> addresses;
  std::unique_ptr<std::atomic<int>[]> holders;
  std::mutex queue_lock;
  std::deque<void*> queue;
  std::atomic<long> gets_ok{0};
  std::atomic<long> gets_empty{0};
};

// One thread's random walk: get, put, hand off, take from the queue.
void random_worker(world_t& world, int tag, std::size_t held_count_max,
                   std::chrono::steady_clock::time_point deadline) {
  std::mt19937 random(static_cast<unsigned>(tag) * 7919u);
  std::vector<void*> held;
  long gets_ok = 0;
  long gets_empty = 0;
  for (long op = 0; op < operations_per_thread_max; ++op) {
    if ((op & 255) == 0 && std::chrono::steady_clock::now() > deadline) break;
    const unsigned action = random() % 8;
    if (action < 4 && held.size() < held_count_max) {
      void* packet = world.pool.get();
      if (packet == nullptr) { ++gets_empty; continue; }
      ++gets_ok;
      world.take(packet, tag);
      held.push_back(packet);
    } else if (action < 6 && !held.empty()) {
      const std::size_t i = random() % held.size();
      world.release(held[i], tag);
      world.pool.put(held[i]);
      held[i] = held.back();
      held.pop_back();
    } else if (action == 6 && !held.empty()) {
      world.release(held.back(), tag);
      world.hand_off(held.back());
      held.pop_back();
    } else if (action == 7) {
      void* packet = world.take_hand_off();
      if (packet != nullptr) {
        world.take(packet, tag);
        held.push_back(packet);
      }
    }
  }
  for (void* packet : held) {
    world.release(packet, tag);
    world.pool.put(packet);
  }
  world.gets_ok.fetch_add(gets_ok);
  world.gets_empty.fetch_add(gets_empty);
}

void expect_all_home(world_t& world, std::size_t packets_count) {
  while (void* packet = world.take_hand_off()) world.pool.put(packet);  // main puts: remote
  EXPECT_EQ(world.pool.packets_free_count(), packets_count);
  for (std::size_t i = 0; i < packets_count; ++i) {
    EXPECT_EQ(world.holders[i].load(), 0) << "packet " << i << " still marked held";
  }
  // And every packet can be got once more, no more (no loss, no duplicate).
  std::vector<void*> again;
  while (void* packet = world.pool.get()) again.push_back(packet);
  std::sort(again.begin(), again.end());
  EXPECT_EQ(std::adjacent_find(again.begin(), again.end()), again.end());
  EXPECT_LE(again.size(), packets_count);  // the rest sit in other deques
  for (void* packet : again) world.pool.put(packet);
  EXPECT_EQ(world.pool.packets_free_count(), packets_count);
}

struct stress_config_t {
  std::size_t threads_count;
  std::size_t packets_count;
  std::size_t deques_count_max;  // small values make threads share deques
  std::size_t threshold;
  std::size_t held_count_max;
};

class PacketPoolStress : public ::testing::TestWithParam<stress_config_t> {};

TEST_P(PacketPoolStress, RandomGetPutHandOffConservesPackets) {
  const stress_config_t config = GetParam();
  auto world = std::make_unique<world_t>(config.packets_count, config.deques_count_max,
                                         config.threshold);
  const auto deadline = std::chrono::steady_clock::now() + run_duration;
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < config.threads_count; ++t) {
    threads.emplace_back(random_worker, std::ref(*world), static_cast<int>(t + 1),
                         config.held_count_max, deadline);
  }
  for (auto& thread : threads) thread.join();
  EXPECT_GT(world->gets_ok.load(), 0);
  std::printf("gets ok %ld, empty %ld\n", world->gets_ok.load(), world->gets_empty.load());
  expect_all_home(*world, config.packets_count);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, PacketPoolStress,
    ::testing::Values(
        // Scarce packets: exhaustion, steals and failed steals are frequent.
        stress_config_t{4, 48, 64, 8, 24},
        // Threads sharing deques (thread index % 2, % 1).
        stress_config_t{5, 64, 2, 8, 16}, stress_config_t{4, 64, 1, 8, 16},
        // Plenty of packets, return policy on remote puts.
        stress_config_t{6, 512, 64, 4, 64}));

// Producers get and hand off, consumers take and put (every put remote): the
// return policy must keep packets flowing back to the producers.
TEST(PacketPoolStress, ProducerConsumerKeepsPacketsFlowing) {
  constexpr std::size_t packets_count = 128;
  constexpr int producers_count = 2;
  constexpr int consumers_count = 2;
  auto world = std::make_unique<world_t>(packets_count, 64, 16);
  const auto deadline = std::chrono::steady_clock::now() + run_duration;
  auto produced = std::make_unique<std::atomic<long>[]>(producers_count);
  std::vector<std::thread> threads;
  for (int p = 0; p < producers_count; ++p) {
    threads.emplace_back([&, p] {
      const int tag = 1 + p;
      long count = 0;
      for (long op = 0; op < operations_per_thread_max; ++op) {
        if ((op & 255) == 0 && std::chrono::steady_clock::now() > deadline) break;
        void* packet = world->pool.get();
        if (packet == nullptr) { std::this_thread::yield(); continue; }
        world->take(packet, tag);
        world->release(packet, tag);
        world->hand_off(packet);
        ++count;
      }
      produced[p].store(count);
    });
  }
  for (int c = 0; c < consumers_count; ++c) {
    threads.emplace_back([&, c] {
      const int tag = 1 + producers_count + c;
      for (long op = 0; op < operations_per_thread_max; ++op) {
        if ((op & 255) == 0 && std::chrono::steady_clock::now() > deadline) break;
        void* packet = world->take_hand_off();
        if (packet == nullptr) { std::this_thread::yield(); continue; }
        world->take(packet, tag);
        world->release(packet, tag);
        world->pool.put(packet);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int p = 0; p < producers_count; ++p) {
    // Far more packets than the pool holds: packets came back to producers.
    EXPECT_GT(produced[p].load(), static_cast<long>(packets_count)) << "producer " << p;
  }
  expect_all_home(*world, packets_count);
}

}  // namespace
