// Shared fixture and suites of the packet pool's Relacy tests (packet_pool_model_test and
// packet_pool_model_three_threads_test): builds a pool_t from production
// source in a suite's before() (on a thread Relacy picks — not always thread
// 0 — whose deque then holds every packet) and tears it down in after(), whose destructor asserts every packet
// is home exactly once. `holders` catches a packet handed to two threads at
// once.
#pragma once

#include <cstddef>

#include "lci/packet_pool/packet_pool.hpp"
#include "tests/model_check/model_check.hpp"

namespace lci::packet_pool::model_test {

inline constexpr int packets_count_max = 3;

struct fixture_t {
  pool_t* pool = nullptr;
  int packets_count = 0;
  std::size_t initial_deque = 0;  // the deque of whichever thread ran before()
  void* addresses[packets_count_max] = {};
  util::atomic<int> holders[packets_count_max];

  // Thread t works on deque t % deques_count (Relacy's thread index).
  void build(int count, std::size_t deques_count, std::size_t threshold) {
    RL_ASSERT(count >= 1 && count <= packets_count_max);
    packets_count = count;
    pool = new pool_t(64, static_cast<std::size_t>(count), deques_count, threshold);
    initial_deque = pool->deque_index_of_this_thread();
    for (int i = 0; i < packets_count; ++i) addresses[i] = pool->get();
    for (int i = 0; i < packets_count; ++i) {
      RL_ASSERT(addresses[i] != nullptr);
      pool->put(addresses[i]);
      holders[i].store(0, util::mo_relaxed);  // relaxed: before the threads start
    }
  }
  int index_of(void* packet) const {
    for (int i = 0; i < packets_count; ++i) {
      if (addresses[i] == packet) return i;
    }
    RL_ASSERT(false);  // not a packet of the pool
    return 0;
  }
  void take(void* packet, int tag) {
    // relaxed: only the value matters (a duplicate reads a nonzero tag).
    RL_ASSERT(holders[index_of(packet)].exchange(tag, util::mo_relaxed) == 0);
  }
  void give_back(void* packet, int tag) {
    // relaxed: as in take().
    RL_ASSERT(holders[index_of(packet)].exchange(0, util::mo_relaxed) == tag);
    pool->put(packet);
  }
  void tear_down() {
    RL_ASSERT(pool->packets_free_count() == static_cast<std::size_t>(packets_count));
    delete pool;  // asserts all home, none twice
  }
};

// A steal racing the owner's get on the LAST packet. The pool's only packet
// sits in the deque of the thread that ran before(); every thread's single
// get races for it: the owner pops it, or a thief's steal (ceil(1/2) = 1)
// moves and pops it first, or a thief finds the owner's lock busy or picks
// another (empty) thief as victim (failed steals). Exactly one get succeeds:
// none duplicated, none lost, and never a spurious all-nullptr (the owner
// fails only when a thief already holds the packet: a thief moves and pops
// under its own lock, so no third thread can see the packet in between).
// Packets go back in after(), so a put cannot hand it to a second getter.
template <unsigned threads_count>
struct last_packet_race_t : rl::test_suite<last_packet_race_t<threads_count>, threads_count> {
  fixture_t world;
  void* got[threads_count] = {};  // each thread writes its own; after() reads
  void before() { world.build(1, threads_count, pool_t::packet_return_threshold_default); }
  void thread(unsigned id) {
    void* packet = world.pool->get();
    if (packet != nullptr) world.take(packet, static_cast<int>(id) + 1);
    got[id] = packet;
  }
  void after() {
    int successes_count = 0;
    for (unsigned id = 0; id < threads_count; ++id) {
      if (got[id] == nullptr) continue;
      ++successes_count;
      world.give_back(got[id], static_cast<int>(id) + 1);
    }
    RL_ASSERT(successes_count == 1);
    world.tear_down();
  }
};

}  // namespace lci::packet_pool::model_test
