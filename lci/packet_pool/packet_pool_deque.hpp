// deque_t: one per-thread deque of free packets (paper §4.1.2), a ring of
// packet pointers guarded by a spinlock.
//
// Thread safety: `lock` may be used by any thread. Every other member function
//                requires the caller to hold `lock` (an unchecked precondition
//                in release builds; a debug assertion checks that *someone*
//                holds it). move_head_to_tail() needs both deques' locks.
// Blocking:      never (the caller decides how it takes `lock`).
// Ownership:     the deque holds pointers to packets that are in the pool; it
//                never owns the packets' memory.
// Allocation:    none; the ring storage is handed in by pool_t, which allocates
//                it once at construction.
// Limits:        capacity is a power of two >= the pool's packets_count, so a
//                deque can hold every packet of the pool and a push can never
//                find it full (asserted). Counters run freely modulo 2^32;
//                size = tail - head is exact because capacity <= 2^31.
// Progress:      blocking (spinlock); see pool_t.
//
// Layout: the owner works at the tail (push_tail/pop_tail), thieves and the
// remote-put policy take from the head, so the packets a thief takes are the
// ones the owner touched least recently (coldest in its cache).
#pragma once

#include <cstdint>
#include <cstring>

#include "lci/packet_pool/packet.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::packet_pool {

class alignas(util::cache_line_bytes) deque_t {
 public:
  deque_t() = default;
  deque_t(const deque_t&) = delete;
  deque_t& operator=(const deque_t&) = delete;

  // Before the pool is shared: `slots` has `capacity` entries.
  void init(packet_header_t** slots, std::uint32_t capacity) {
    LCI_ASSERT(capacity > 0 && (capacity & (capacity - 1)) == 0,
               "deque capacity must be a power of two");
    // Unreachable mutants: bound. The mutant differs only at capacity 2^31, which the pool
    // never reaches: its rings have at most packets_count_max = 2^30 slots
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
    LCI_ASSERT(capacity <= (std::uint32_t{1} << 31),
               "deque capacity too large for 32-bit counters");
    slots_ = slots;
    mask_ = capacity - 1;
  }

  std::uint32_t size() const {
    LCI_DEBUG_ASSERT(lock.is_locked(), "deque accessed without its lock");
    return tail_.load() - head_.load();  // unsigned wrap-around is intended
  }
  std::uint32_t capacity() const { return mask_ + 1; }

  void push_tail(packet_header_t* packet) {
    LCI_DEBUG_ASSERT(lock.is_locked(), "deque accessed without its lock");
    const std::uint32_t tail = tail_.load();
    // Equivalent mutants: bound. Strict already: a deque's capacity is at least the pool's
    // packet count, and the packet being pushed is in no deque
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
    LCI_ASSERT(tail - head_.load() < capacity(), "deque overflow: more packets than the pool has");
    slots_[tail & mask_] = packet;
    tail_.store(tail + 1);
  }

  // nullptr when empty.
  packet_header_t* pop_tail() {
    LCI_DEBUG_ASSERT(lock.is_locked(), "deque accessed without its lock");
    const std::uint32_t tail = tail_.load();
    if (tail == head_.load()) return nullptr;
    tail_.store(tail - 1);
    packet_header_t* packet = slots_[(tail - 1) & mask_];
    LCI_DEBUG_ASSERT(packet != nullptr, "deque slot holds no packet");
    return packet;
  }

  // Moves the `count` oldest packets of `source` (its head) to the tail of
  // `target`, keeping their order. Both locks held, source != target.
  static void move_head_to_tail(deque_t& source, deque_t& target,
                                std::uint32_t count) {
    LCI_ASSERT(&source != &target, "moving packets within one deque");
    LCI_ASSERT(count <= source.size(), "moving more packets than the deque has");
    LCI_ASSERT(target.size() + count <= target.capacity(), "deque overflow on move");
    std::uint32_t from = source.head_.load();
    std::uint32_t to = target.tail_.load();
    std::uint32_t left = count;
    // At most three iterations: each chunk ends where the source or the
    // target ring wraps, and each wraps at most once within `count`.
    while (left > 0) {
      const std::uint32_t from_slot = from & source.mask_;
      const std::uint32_t to_slot = to & target.mask_;
      std::uint32_t chunk = left;
      // Equivalent mutants: bound. At equality the assignment writes the value chunk already
      // has (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
      if (chunk > source.capacity() - from_slot) chunk = source.capacity() - from_slot;
      // Equivalent mutants: bound. As above, chunk keeps its value at equality
      // (tools/mutate_records/2026-11-27-runs-05-28.md, run 9).
      if (chunk > target.capacity() - to_slot) chunk = target.capacity() - to_slot;
      std::memcpy(&target.slots_[to_slot], &source.slots_[from_slot],
                  chunk * sizeof(packet_header_t*));
      from += chunk;
      to += chunk;
      left -= chunk;
    }
    source.head_.store(from);
    // (The mutation, tests only, publishes the target's tail one short: the
    // newest moved packet leaves the source but never arrives — it is lost.)
    target.tail_.store(util::mutated("packet_pool_move_loses_newest") ? to - 1 : to);
  }

  // For teardown checks (no concurrent users): the i-th packet from the head.
  packet_header_t* at(std::uint32_t i) const {
    LCI_ASSERT(i < tail_.load() - head_.load(), "deque index out of range");
    return slots_[(head_.load() + i) & mask_];
  }

  // Guards head_, tail_ and the slots. Owners take it with lock(); thieves
  // and the remote-put policy only ever try_lock() it while holding their own
  // deque's lock, so no thread waits while holding a lock another waits for.
  util::spinlock_t lock;
  // 0 until the deque is in the pool's list of active deques (steal victims);
  // set once, by the single thread that wins the compare-exchange.
  util::atomic<std::uint8_t> registered{0};

 private:
  util::var<std::uint32_t> head_{0};  // oldest packet (steal end)
  util::var<std::uint32_t> tail_{0};  // one past the newest (owner end)
  packet_header_t** slots_ = nullptr;
  std::uint32_t mask_ = 0;
};

// Each deque's lock and indices on their own line: the owners of two deques
// never false-share, and a thief touches only its victim's line. (Relacy's
// instrumented atomics are larger; the layout matters only in production.)
#if !defined(LCI_MODEL_CHECK)
static_assert(sizeof(deque_t) == util::cache_line_bytes, "one deque per cache line");
#endif
static_assert(alignof(deque_t) == util::cache_line_bytes, "deques are line aligned");

}  // namespace lci::packet_pool
