// The storage of the matching table (see matching_table.hpp and
// docs/design/matching.md): one-cache-line buckets, one-cache-line overflow
// nodes, and the preallocated pool the overflow nodes come from.
//
// Everything in a bucket and in a node on a bucket's chain is plain data
// guarded by that bucket's spinlock; it is declared util::var<T> so that the
// Relacy model checker sees (and would report) any access made without the
// lock. In production var<T> is exactly a T.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "lci/matching/matching_key.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::matching::detail {

// Inline room of a bucket: key slots, and values per key slot.
inline constexpr std::size_t bucket_slots_count = 2;
inline constexpr std::size_t slot_values_count_max = 2;
// Values one overflow node holds (all of one key, oldest first).
inline constexpr std::size_t node_values_count_max = 3;

inline constexpr std::uint8_t type_bits(matching_entry_type_t type) {
  return type == matching_entry_type_t::send ? 0 : 1;
}

// One segment of a key's overflow queue: up to node_values_count_max entries
// of one key, oldest first. A bucket's chain is a list of queues, one per
// key: the first segment of each queue (its head) also carries the key, the
// type, the link to the next key's queue and the queue's newest segment, so
// appending and removing are O(1) however long the queue grows.
//
// While in use a node is guarded by its bucket's lock; while free it is on the
// pool's free list through free_next. One cache line, so two nodes used under
// two different bucket locks (and their free_next, written by different
// threads) never false-share.
struct alignas(util::cache_line_bytes) overflow_node_t {
  util::var<matching_entry_key_t> key;  // head only
  util::var<overflow_node_t*> next;     // head only: next key's queue
  util::var<overflow_node_t*> tail;     // head only: newest segment
  util::var<overflow_node_t*> more;     // next (newer) segment of this key
  util::var<matching_entry_val_t> values[node_values_count_max];
  util::atomic<std::uint32_t> free_next;  // pool free list; an index
  util::var<std::uint8_t> values_count;   // 1..node_values_count_max in use
  util::var<std::uint8_t> type;           // head only: type_bits() of all
};

// A bucket: the lock, up to bucket_slots_count keys with up to
// slot_values_count_max values each, and the head of the overflow chain.
// A slot is free when its values_count is 0. Threads using different buckets
// never share a line; threads using one bucket serialize on its lock anyway.
struct alignas(util::cache_line_bytes) bucket_t {
  util::spinlock_t lock;
  util::var<std::uint8_t> values_count[bucket_slots_count];
  util::var<std::uint8_t> types[bucket_slots_count];
  util::var<matching_entry_key_t> keys[bucket_slots_count];
  util::var<matching_entry_val_t> values[bucket_slots_count]
                                        [slot_values_count_max];
  util::var<overflow_node_t*> overflow_head;
};

#if !defined(LCI_MODEL_CHECK)  // Relacy's var<T> is larger than a T
static_assert(sizeof(overflow_node_t) == util::cache_line_bytes &&
                  alignof(overflow_node_t) == util::cache_line_bytes,
              "an overflow node is exactly one cache line");
static_assert(sizeof(bucket_t) == util::cache_line_bytes &&
                  alignof(bucket_t) == util::cache_line_bytes,
              "a bucket is exactly one cache line (paper §4.1.3: an insert "
              "at low load factor costs one cache miss)");
#endif

// overflow_pool_t: the overflow nodes of one table, all allocated at
// construction, and a free list of them (a Treiber stack of node indices
// whose head word carries a 32-bit version tag against ABA).
//
// Thread safety: pop/push may run concurrently from any threads (callers hold
//                some bucket lock, never the same one necessarily).
//                free_count() only when quiescent.
// Blocking:      never. pop/push are lock-free: a failed CAS means another
//                pop/push succeeded, so the loops cannot livelock.
// Ownership:     pop() hands a node to the caller exclusively until push().
// Allocation:    the node array in the constructor; none afterwards.
// Limits:        nodes_count <= nodes_count_max; pop() returns nullptr when
//                all nodes are in use. ABA is excluded unless one pop stalls
//                between its load and its CAS while others complete 2^32
//                pushes and pops.
// Linearization: the successful CAS on head_ in pop() / push().
class overflow_pool_t {
 public:
  static constexpr std::uint32_t index_none = 0xFFFFFFFFu;
  static constexpr std::size_t nodes_count_max = index_none - 1;

  explicit overflow_pool_t(std::size_t nodes_count)
      : nodes_(nodes_count == 0 ? nullptr : new overflow_node_t[nodes_count]),
        nodes_count_(nodes_count) {
    // Unreachable mutants: bound. The mutant differs only for a pool of exactly
    // nodes_count_max nodes (256 GiB of cache-line nodes, allocated above), which no machine
    // here builds; callers meet the table's own check first
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 7b).
    LCI_ASSERT(nodes_count <= nodes_count_max, "overflow pool too large");
    // Not yet shared: link node i to node i + 1, node 0 at the head.
    for (std::size_t i = 0; i < nodes_count; ++i) {
      const bool last = i + 1 == nodes_count;
      // relaxed: construction; the table is published to other threads by
      // whatever hands them the table pointer.
      nodes_[i].free_next.store(
          last ? index_none : static_cast<std::uint32_t>(i + 1), mo_relaxed);
    }
    head_.word.store(pack(nodes_count == 0 ? index_none : 0, 0),
                     mo_relaxed);  // relaxed: construction, as above
  }

  overflow_pool_t(const overflow_pool_t&) = delete;
  overflow_pool_t& operator=(const overflow_pool_t&) = delete;

  // A free node, or nullptr when every node is in use.
  [[nodiscard]] overflow_node_t* pop() {
    // Broken variant for the model checker only (lci/util/mutation.hpp):
    // both acquires of [P1] weakened to relaxed.
    constexpr util::memory_order mo_pop =
        util::mutated("matching_pool_pop_relaxed") ? mo_relaxed : mo_acquire;
    // acquire: pairs with the release CAS in push() [P2], so the free_next
    // that push stored for the head node is visible before we read it.
    std::uint64_t head = head_.word.load(mo_pop);
    // Lock-free: each failed CAS means another pop/push changed head.
    for (;;) {
      const std::uint32_t index = index_of(head);
      if (index == index_none) return nullptr;
      // Equivalent mutants: bound. The check is strict already: head_ and the links hold only
      // node indices (construction's i + 1 below the count, push's offsets checked there) or
      // index_none, tested above (tools/mutate_records/2026-11-27-runs-05-28.md, run 7b).
      LCI_ASSERT(index < nodes_count_, "free list index out of range");
      // relaxed: ordered by the acquire above; if the node was popped and
      // pushed again since, head's tag changed and the CAS below fails.
      const std::uint32_t next = nodes_[index].free_next.load(mo_relaxed);
      // [P1] acquire (success): pairs with the release CAS in push() [P2]
      // whose release sequence we read (RMWs extend it), so the last user's
      // accesses to the node happen before ours. acquire (failure): as the
      // load above, for the retry.
      if (head_.word.compare_exchange_weak(head, pack(next, next_tag(head)),
                                           mo_pop, mo_pop)) {
        return &nodes_[index];
      }
    }
  }

  void push(overflow_node_t* node) {
    LCI_ASSERT(node != nullptr, "push of a null overflow node");
    const std::size_t offset = static_cast<std::size_t>(node - nodes_.get());
    LCI_ASSERT(offset < nodes_count_, "push of a node from another pool");
    // relaxed: only a first guess; the CAS below validates it.
    std::uint64_t head = head_.word.load(mo_relaxed);
    // Lock-free: each failed CAS means another pop/push changed head.
    for (;;) {
      // relaxed: published by the release CAS below [P2].
      node->free_next.store(index_of(head), mo_relaxed);
      // [P2] release: pairs with the acquire load and CAS in pop() [P1], so
      // free_next and our last reads/writes of the node precede the next
      // owner's. relaxed (failure): we only retry with the new head.
      if (head_.word.compare_exchange_weak(
              head, pack(static_cast<std::uint32_t>(offset), next_tag(head)),
              mo_release, mo_relaxed)) {
        return;
      }
    }
  }

  // Nodes on the free list. Only when no pop/push runs concurrently.
  std::size_t free_count() const {
    std::size_t count = 0;
    // acquire: pairs with [P2]; quiescent, so this is the final head.
    // Equivalent mutants: mo_weaken. Relaxed would do: whatever made the pool quiescent (a
    // join, a lock) already orders the last push before this load
    // (tools/mutate_records/2026-11-26-runs-01-04.md, run 2a).
    std::uint32_t index = index_of(head_.word.load(mo_acquire));
    while (index != index_none) {
      // Equivalent mutants: bound. Strict already, as in pop()
      // (tools/mutate_records/2026-11-27-runs-05-28.md, run 7b).
      LCI_ASSERT(index < nodes_count_, "free list index out of range");
      ++count;
      LCI_ASSERT(count <= nodes_count_, "free list has a cycle");
      // relaxed: quiescent; ordered by the acquire above.
      index = nodes_[index].free_next.load(mo_relaxed);
    }
    return count;
  }

  std::size_t nodes_count() const { return nodes_count_; }

 private:
  static std::uint64_t pack(std::uint32_t index, std::uint64_t tag) {
    return (tag << 32) | index;
  }
  static std::uint32_t index_of(std::uint64_t word) {
    return static_cast<std::uint32_t>(word);
  }
  static std::uint64_t tag_of(std::uint64_t word) { return word >> 32; }
  // The version for the next head word: bumped on every pop and push. The
  // broken variant "matching_pool_no_version" (tests only) keeps it, which
  // lets a stalled pop's CAS succeed after a pop-pop-push (ABA).
  static std::uint64_t next_tag(std::uint64_t word) {
    return tag_of(word) + (util::mutated("matching_pool_no_version") ? 0 : 1);
  }

  static constexpr util::memory_order mo_relaxed = util::mo_relaxed;
  static constexpr util::memory_order mo_acquire = util::mo_acquire;
  static constexpr util::memory_order mo_release = util::mo_release;

  // The head word is written (CAS) by every thread that takes or returns a
  // node: its own line, apart from the read-only fields below.
  struct alignas(util::cache_line_bytes) head_line_t {
    util::atomic<std::uint64_t> word;
  };
#if !defined(LCI_MODEL_CHECK)
  static_assert(sizeof(head_line_t) == util::cache_line_bytes,
                "the free-list head owns its cache line");
#endif

  head_line_t head_;
  const std::unique_ptr<overflow_node_t[]> nodes_;
  const std::size_t nodes_count_;
};

}  // namespace lci::matching::detail
