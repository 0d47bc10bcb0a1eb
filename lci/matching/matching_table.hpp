// table_t: the hashtable behind LCI's matching engine (paper §4.1.3).
//
// insert(key, value, type) either stores the entry or, when an entry with the
// same key and the complementary type (send vs. recv) is waiting, removes the
// oldest such entry and returns its value. Entries of one key are matched in
// FIFO order; entries of different keys are independent. take_if(key, type,
// accept) is the match half alone: it takes the oldest complementary entry
// only if accept(value) says so, and never stores.
//
// Layout (docs/design/matching.md): buckets_count buckets (a power of two),
// each exactly one cache line holding a one-byte spinlock, two inline key
// slots with two inline values each, and the head of an overflow chain: a
// list of per-key queues of nodes (one line each, up to three values of one
// key) taken from a pool allocated at construction. With a low load factor
// an insert touches one bucket line: one cache miss.
//
// Thread safety: insert() and make_key() may run concurrently from any
//                threads. entries_count() and overflow_nodes_free_count() may
//                too, but are exact only when no insert runs.
// Blocking:      insert() takes one bucket's spinlock for a bounded critical
//                section (no allocation, no blocking; its one walk is over
//                the distinct keys on the bucket's chain, bounded by
//                overflow_nodes_max); it spins only while another thread is
//                inside that bucket. Overflow-node pop/push are lock-free.
// Progress:      deadlock-free (one lock per insert); not starvation-free.
// Linearization: an insert takes effect inside its bucket's critical section.
// Ownership:     the table stores values but never dereferences or frees
//                them; a matched value goes back to the caller. Values still
//                stored at destruction are the caller's to reclaim.
// Allocation:    buckets and overflow nodes in the constructor only; insert
//                never allocates.
// Limits:        at most overflow_nodes_max overflow nodes (each holds up to
//                three entries of one key). An insert that needs a node when
//                none is free stores nothing and returns retry_nomem; the
//                caller retries after matches have freed nodes. Inline slots
//                need no node, so matches and most stores still work.
// Preconditions: value != nullptr (checked); type is send or recv (checked).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "lci/matching/matching_key.hpp"
#include "lci/matching/matching_table_bucket.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/mutation.hpp"
#include "lci/util/spinlock.hpp"

namespace lci::matching {

enum class insert_kind_t { stored, matched, retry_nomem };

struct insert_result_t {
  insert_kind_t kind;
  matching_entry_val_t value;  // the matched entry's value; else nullptr
};

// A 64-bit finalizer (MurmurHash3's fmix64): every key bit affects every
// hash bit, so keys that differ only in high bits (the policy, the rank) or
// only in low bits (consecutive tags) spread over all buckets.
inline std::uint64_t hash_key(matching_entry_key_t key) {
  std::uint64_t x = key;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

class table_t {
 public:
  static constexpr std::size_t buckets_count_default = 65536;
  static constexpr std::size_t buckets_count_max = std::size_t{1} << 32;
  static constexpr std::size_t overflow_nodes_max_default = 65536;
  static constexpr std::size_t overflow_nodes_max_limit =
      detail::overflow_pool_t::nodes_count_max;

  // The constructor's checks of its sizes, callable without allocating
  // (so the limits themselves can be tested): each returns its argument,
  // or throws std::invalid_argument naming the bound.
  static std::size_t checked_buckets_count(std::size_t buckets_count) {
    const bool power_of_two =
        buckets_count != 0 && (buckets_count & (buckets_count - 1)) == 0;
    if (!power_of_two || buckets_count > buckets_count_max) {
      throw std::invalid_argument("lci::matching::table_t: buckets_count = " +
                                  std::to_string(buckets_count) +
                                  " must be a power of two in [1, " +
                                  std::to_string(buckets_count_max) + "]");
    }
    return buckets_count;
  }

  static std::size_t checked_overflow_nodes_max(std::size_t nodes_max) {
    if (nodes_max > overflow_nodes_max_limit) {
      throw std::invalid_argument(
          "lci::matching::table_t: overflow_nodes_max = " +
          std::to_string(nodes_max) + " is over the limit " +
          std::to_string(overflow_nodes_max_limit));
    }
    return nodes_max;
  }

  // Throws std::invalid_argument when buckets_count is not a power of two in
  // [1, buckets_count_max] or overflow_nodes_max > overflow_nodes_max_limit.
  explicit table_t(std::size_t buckets_count = buckets_count_default,
                   std::size_t overflow_nodes_max = overflow_nodes_max_default,
                   make_key_fn_t make_key_fn = nullptr)
      : buckets_count_(checked_buckets_count(buckets_count)),
        bucket_index_mask_(buckets_count - 1),
        buckets_(new detail::bucket_t[buckets_count]),
        pool_(checked_overflow_nodes_max(overflow_nodes_max)),
        key_maker_(make_key_fn) {}

  ~table_t() {
    // Teardown check: every overflow node is either free or on a chain.
    LCI_DEBUG_ASSERT(
        census().nodes_count + pool_.free_count() == pool_.nodes_count(),
        "overflow nodes lost");
  }

  table_t(const table_t&) = delete;
  table_t& operator=(const table_t&) = delete;

  // The key for (rank, tag) under `policy`: the user's function if the table
  // was given one, else the lossless make_key (which may throw).
  matching_entry_key_t make_key(int rank, tag_t tag,
                                matching_policy_t policy) const {
    return key_maker_(rank, tag, policy);
  }

  // Stores (key, value, type) unless an entry with the same key and the
  // complementary type is waiting; then the oldest such entry is removed and
  // its value returned. retry_nomem: nothing stored, nothing removed.
  [[nodiscard]] insert_result_t insert(matching_entry_key_t key,
                                       matching_entry_val_t value,
                                       matching_entry_type_t type) {
    LCI_ASSERT(value != nullptr, "nullptr is not a valid matching value");
    LCI_ASSERT(type == matching_entry_type_t::send ||
                   type == matching_entry_type_t::recv,
               "invalid matching_entry_type_t");
    detail::bucket_t& bucket = buckets_[hash_key(key) & bucket_index_mask_];
    insert_result_t result{};
    if (util::mutated("matching_bucket_unlocked")) {
      // Broken variant for the model checker only: no bucket lock.
      result = insert_locked(bucket, key, value, detail::type_bits(type));
    } else {
      util::spinlock_guard_t guard(bucket.lock);
      result = insert_locked(bucket, key, value, detail::type_bits(type));
    }
    if (result.kind == insert_kind_t::matched) {
      LCI_ASSERT(result.value != nullptr, "matched a null value");
    }
    return result;
  }

  // Removes and returns the oldest waiting entry of `key` with the type
  // complementary to `type` if there is one and accept(its value) is true;
  // otherwise changes nothing and returns nullptr (a match that may only
  // complete at once peeks before it takes). accept runs under the bucket
  // lock: it must only read the value.
  [[nodiscard]] matching_entry_val_t take_if(matching_entry_key_t key,
                                             matching_entry_type_t type,
                                             bool (*accept)(matching_entry_val_t)) {
    LCI_ASSERT(accept != nullptr, "take_if without a predicate");
    LCI_ASSERT(type == matching_entry_type_t::send ||
                   type == matching_entry_type_t::recv,
               "invalid matching_entry_type_t");
    const std::uint8_t bits = detail::type_bits(type);
    detail::bucket_t& bucket = buckets_[hash_key(key) & bucket_index_mask_];
    util::spinlock_guard_t guard(bucket.lock);
    const int slot = inline_find(bucket, key);
    if (slot >= 0) {  // [I2]: the inline entries are the key's oldest
      if (bucket.types[slot].load() == bits) return nullptr;
      const std::uint8_t count = bucket.values_count[slot].load();
      if (!accept(bucket.values[slot][taken_index(count)].load())) {
        return nullptr;
      }
      return take_inline_oldest(bucket, slot);
    }
    const queue_find_t found = queue_find(bucket, key);
    if (found.head == nullptr || found.head->type.load() == bits) {
      return nullptr;
    }
    const std::uint8_t count = found.head->values_count.load();
    if (!accept(found.head->values[taken_index(count)].load())) return nullptr;
    return queue_take_oldest(bucket, found);
  }

  // Entries stored (inline and overflow). Exact only when quiescent.
  std::size_t entries_count() const { return census().entries_count; }

  // Overflow nodes not in use. Only when quiescent.
  std::size_t overflow_nodes_free_count() const { return pool_.free_count(); }

  std::size_t buckets_count() const { return buckets_count_; }
  std::size_t overflow_nodes_max() const { return pool_.nodes_count(); }

 private:
  using bucket_t = detail::bucket_t;
  using node_t = detail::overflow_node_t;

  // A key's overflow queue on a bucket's chain, and the queue before it.
  struct queue_find_t {
    node_t* prev = nullptr;
    node_t* head = nullptr;
  };

  struct census_t {
    std::size_t entries_count = 0;
    std::size_t nodes_count = 0;
  };

  // Invariants of a bucket (docs/design/matching.md), for a key K:
  //  [I1] K has at most one inline slot and at most one overflow queue, and
  //       all of K's entries have one type.
  //  [I2] If K has an inline slot, its inline entries are older than its
  //       queue entries, and if the slot is not full K has no queue.
  //  [I3] Every segment of a queue holds 1..node_values_count_max entries,
  //       oldest first, and segments run oldest to newest.
  insert_result_t insert_locked(bucket_t& bucket, matching_entry_key_t key,
                                matching_entry_val_t value, std::uint8_t type) {
    const int slot = inline_find(bucket, key);
    if (slot >= 0) {
      if (bucket.types[slot].load() != type) {
        return {insert_kind_t::matched, take_inline_oldest(bucket, slot)};
      }
      if (bucket.values_count[slot].load() < detail::slot_values_count_max) {
        LCI_DEBUG_ASSERT(queue_find(bucket, key).head == nullptr,
                         "[I2] a key with a non-full slot has a queue");
        inline_append(bucket, slot, value);
        return {insert_kind_t::stored, nullptr};
      }
    }
    const queue_find_t found = queue_find(bucket, key);
    if (found.head != nullptr) {
      if (found.head->type.load() != type) {
        LCI_ASSERT(slot < 0, "[I1] a key with two types");
        return {insert_kind_t::matched, queue_take_oldest(bucket, found)};
      }
      if (!queue_append(found.head, value)) {
        return {insert_kind_t::retry_nomem, nullptr};
      }
      return {insert_kind_t::stored, nullptr};
    }
    if (slot < 0) {
      const int free_slot = inline_free_slot(bucket);
      if (free_slot >= 0) {
        inline_store(bucket, free_slot, key, value, type);
        return {insert_kind_t::stored, nullptr};
      }
    }
    if (!queue_create(bucket, key, value, type)) {
      return {insert_kind_t::retry_nomem, nullptr};
    }
    return {insert_kind_t::stored, nullptr};
  }

  static int inline_find(const bucket_t& bucket, matching_entry_key_t key) {
    // Stores put a key inline only when it is nowhere in the bucket, so the
    // first hit is the only one [I1].
    for (std::size_t s = 0; s < detail::bucket_slots_count; ++s) {
      if (bucket.values_count[s].load() != 0 && bucket.keys[s].load() == key) {
        return static_cast<int>(s);
      }
    }
    return -1;
  }

  static int inline_free_slot(const bucket_t& bucket) {
    for (std::size_t s = 0; s < detail::bucket_slots_count; ++s) {
      if (bucket.values_count[s].load() == 0) return static_cast<int>(s);
    }
    return -1;
  }

  static void inline_store(bucket_t& bucket, int slot, matching_entry_key_t key,
                           matching_entry_val_t value, std::uint8_t type) {
    LCI_ASSERT(bucket.values_count[slot].load() == 0, "store into a used slot");
    LCI_DEBUG_ASSERT(inline_find(bucket, key) < 0, "[I1] key already inline");
    bucket.keys[slot].store(key);
    bucket.types[slot].store(type);
    bucket.values[slot][0].store(value);
    bucket.values_count[slot].store(1);
  }

  static void inline_append(bucket_t& bucket, int slot,
                            matching_entry_val_t value) {
    const std::uint8_t count = bucket.values_count[slot].load();
    LCI_ASSERT(count >= 1, "append to a free slot");
    // Equivalent mutants: bound. Strict already: the one caller, insert_locked(), appends
    // only after reading values_count < slot_values_count_max under the same bucket lock
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 7).
    LCI_ASSERT(count < detail::slot_values_count_max, "append to a full slot");
    bucket.values[slot][count].store(value);
    bucket.values_count[slot].store(static_cast<std::uint8_t>(count + 1));
  }

  // Removes and returns the slot's oldest value. When the slot was full, the
  // key's oldest queued entry (if any) moves into the freed place [I2].
  matching_entry_val_t take_inline_oldest(bucket_t& bucket, int slot) {
    const std::uint8_t count = bucket.values_count[slot].load();
    LCI_ASSERT(count >= 1, "take from a free slot");
    LCI_ASSERT(count <= detail::slot_values_count_max, "slot count corrupt");
    const std::uint8_t taken = taken_index(count);
    const matching_entry_val_t oldest = bucket.values[slot][taken].load();
    // Equivalent mutants: bound. Same behaviour: the extra lap's copy into values[count - 1]
    // is overwritten with nullptr next, under the bucket lock; at a full slot it reads one
    // past the slot's array, still inside the bucket
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 7).
    for (std::uint8_t i = taken + 1; i < count; ++i) {
      bucket.values[slot][i - 1].store(bucket.values[slot][i].load());
    }
    bucket.values[slot][count - 1].store(nullptr);
    std::uint8_t count_after = static_cast<std::uint8_t>(count - 1);
    if (count == detail::slot_values_count_max &&
        bucket.overflow_head.load() != nullptr) {
      const queue_find_t found = queue_find(bucket, bucket.keys[slot].load());
      if (found.head != nullptr) {
        bucket.values[slot][count_after].store(
            queue_take_oldest(bucket, found));
        ++count_after;
      }
    } else {
      LCI_DEBUG_ASSERT(
          queue_find(bucket, bucket.keys[slot].load()).head == nullptr,
          "[I2] a key with a non-full slot has a queue");
    }
    bucket.values_count[slot].store(count_after);
    return oldest;
  }

  // Which of a slot's or segment's `count` values (oldest first) a match
  // takes: the oldest. The broken variant "matching_lifo_within_key" (tests
  // only) takes the newest instead.
  static std::uint8_t taken_index(std::uint8_t count) {
    return util::mutated("matching_lifo_within_key")
               ? static_cast<std::uint8_t>(count - 1)
               : 0;
  }

  // Walks the chain of key queues: bounded by the distinct keys in the
  // bucket, at most overflow_nodes_max (asserted against cycles).
  queue_find_t queue_find(const bucket_t& bucket,
                          matching_entry_key_t key) const {
    queue_find_t found;
    std::size_t queues_walked = 0;
    for (node_t* head = bucket.overflow_head.load(); head != nullptr;
         head = head->next.load()) {
      ++queues_walked;
      LCI_ASSERT(queues_walked <= pool_.nodes_count(), "overflow chain cycle");
      if (head->key.load() == key) {
        found.head = head;
        return found;
      }
      found.prev = head;
    }
    found.prev = nullptr;
    return found;
  }

  // Removes and returns the queue's oldest value. An emptied head takes over
  // its next segment's entries (that segment is freed); an emptied queue is
  // unlinked from the chain and freed.
  matching_entry_val_t queue_take_oldest(bucket_t& bucket,
                                         const queue_find_t& found) {
    node_t* head = found.head;
    const std::uint8_t count = head->values_count.load();
    LCI_ASSERT(count >= 1, "[I3] an empty queue head");
    LCI_ASSERT(count <= detail::node_values_count_max, "node count corrupt");
    const std::uint8_t taken = taken_index(count);
    const matching_entry_val_t oldest = head->values[taken].load();
    // Equivalent mutants: bound. Same behaviour, as in take_inline_oldest(): the extra copy is
    // overwritten with nullptr next; the one-past read stays inside the node
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 7).
    for (std::uint8_t i = taken + 1; i < count; ++i) {
      head->values[i - 1].store(head->values[i].load());
    }
    head->values[count - 1].store(nullptr);
    head->values_count.store(static_cast<std::uint8_t>(count - 1));
    if (count > 1) return oldest;
    node_t* segment = head->more.load();
    if (segment != nullptr) {
      segment_move_into_head(head, segment);
      return oldest;
    }
    LCI_ASSERT(head->tail.load() == head, "[I3] queue tail lost");
    node_t* next = head->next.load();
    if (found.prev == nullptr) {
      bucket.overflow_head.store(next);
    } else {
      found.prev->next.store(next);
    }
    node_release(head);
    return oldest;
  }

  // The head is empty: it takes the next segment's entries and links, and
  // the segment goes back to the pool.
  void segment_move_into_head(node_t* head, node_t* segment) {
    const std::uint8_t count = segment->values_count.load();
    LCI_ASSERT(count >= 1, "[I3] an empty queue segment");
    LCI_ASSERT(head->values_count.load() == 0, "move into a non-empty head");
    for (std::uint8_t i = 0; i < count; ++i) {
      head->values[i].store(segment->values[i].load());
      segment->values[i].store(nullptr);
    }
    segment->values_count.store(0);
    head->values_count.store(count);
    head->more.store(segment->more.load());
    if (head->tail.load() == segment) head->tail.store(head);
    node_release(segment);
  }

  // Appends to the queue's newest segment if it has room, else to a new
  // segment. false: no free node, nothing changed.
  bool queue_append(node_t* head, matching_entry_val_t value) {
    node_t* tail = head->tail.load();
    LCI_ASSERT(tail != nullptr, "[I3] queue without a tail");
    const std::uint8_t count = tail->values_count.load();
    if (count < detail::node_values_count_max) {
      tail->values[count].store(value);
      tail->values_count.store(static_cast<std::uint8_t>(count + 1));
      return true;
    }
    node_t* segment = node_acquire(value);
    if (segment == nullptr) return false;
    tail->more.store(segment);
    head->tail.store(segment);
    return true;
  }

  // Links a new queue for `key` at the front of the chain (the order of
  // queues does not matter: keys are independent). false: no free node.
  bool queue_create(bucket_t& bucket, matching_entry_key_t key,
                    matching_entry_val_t value, std::uint8_t type) {
    LCI_DEBUG_ASSERT(queue_find(bucket, key).head == nullptr,
                     "[I1] a key with two queues");
    node_t* head = node_acquire(value);
    if (head == nullptr) return false;
    head->key.store(key);
    head->type.store(type);
    head->tail.store(head);
    head->next.store(bucket.overflow_head.load());
    bucket.overflow_head.store(head);
    return true;
  }

  // A node from the pool holding just `value`; nullptr if none is free.
  node_t* node_acquire(matching_entry_val_t value) {
    node_t* node = pool_.pop();
    if (node == nullptr) return nullptr;
    LCI_ASSERT(node->values_count.load() == 0, "a free node holds values");
    node->values[0].store(value);
    node->values_count.store(1);
    node->more.store(nullptr);
    return node;
  }

  void node_release(node_t* node) {
    LCI_ASSERT(node->values_count.load() == 0, "release of a node in use");
    node->next.store(nullptr);
    node->more.store(nullptr);
    node->tail.store(nullptr);
    pool_.push(node);
  }

  // Counts under each bucket's lock; exact only when quiescent.
  census_t census() const {
    census_t census;
    for (std::size_t b = 0; b < buckets_count_; ++b) {
      bucket_t& bucket = buckets_[b];
      util::spinlock_guard_t guard(bucket.lock);
      for (std::size_t s = 0; s < detail::bucket_slots_count; ++s) {
        census.entries_count += bucket.values_count[s].load();
      }
      for (node_t* head = bucket.overflow_head.load(); head != nullptr;
           head = head->next.load()) {
        for (node_t* node = head; node != nullptr; node = node->more.load()) {
          ++census.nodes_count;
          LCI_ASSERT(census.nodes_count <= pool_.nodes_count(),
                     "overflow chain cycle");
          census.entries_count += node->values_count.load();
        }
      }
    }
    return census;
  }

  // Read-only after construction (shared by every thread).
  const std::size_t buckets_count_;
  const std::uint64_t bucket_index_mask_;
  const std::unique_ptr<bucket_t[]> buckets_;
  // The pool's free-list head sits on its own cache line inside pool_.
  detail::overflow_pool_t pool_;
  const key_maker_t key_maker_;
};

}  // namespace lci::matching
