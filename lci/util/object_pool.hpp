// object_pool_t<T>: objects_max slots for T, allocated at construction;
// take() constructs a T in a free slot, give_back() destroys it and frees
// the slot; take_up_to() and give_back_all() do the same for several at
// once with one CAS (a per-thread cache's refill and flush). What the
// runtime's data path uses instead of new/delete for its
// short-lived records (requests, unexpected messages, queued completion
// statuses), so that it never allocates after init and never holds more
// than a configured number of them.
//
// Thread safety: all four may run concurrently from any
//                threads; a T may be given back by another thread than the
//                one that took it.
// Blocking:      never.
// Progress:      lock-free: a CAS on the free list's head fails only when
//                another thread's take or give_back succeeded.
// Ownership:     the pool owns the slots; a taken object is its taker's
//                until given back. The destructor frees the slots without
//                destroying objects still taken (their owners are torn down
//                with the pool; T must not need its destructor then).
// Allocation:    the slots and their links, at construction only.
// Limits:        objects_max objects taken at once (< 2^32); take() on an
//                empty pool returns nullptr (the caller answers retry or
//                waits), never allocates.
// Linearization: a take at its successful CAS of head_ (or, empty, at the
//                load that found no slot); a give_back at its CAS.
//
// The free list is a stack of slot indices. head_ packs the top index
// (+1, so 0 is empty) with a version that every successful CAS increments:
// a taker that read index i and i's link, was preempted while i was taken,
// given back and taken again, fails its CAS on the version instead of
// installing a stale link (the ABA problem). Links live apart from the
// slots, in atomics, so that a taker reading the link of a slot another
// thread just took races with nothing that thread writes into its object.
// Model-checked with Relacy (tests/util/object_pool_model_test.cpp), with
// two broken variants it must catch: no version, and a relaxed give_back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"

namespace lci::util {

template <typename T>
class object_pool_t {
 public:
  explicit object_pool_t(std::size_t objects_max)
      : objects_max_(objects_max),
        slots_(new slot_t[objects_max]),
        links_(new util::atomic<std::uint32_t>[objects_max]) {
    LCI_ASSERT(objects_max > 0, "an object pool needs room for one object");
    // Equivalent mutants: bound. Stricter than needed: with 2^32 - 1 slots the largest link,
    // 2^32 - 1, still fits the 32-bit links; index_none is never stored
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 6).
    LCI_ASSERT(objects_max < index_none, "an object pool over 2^32 - 1 slots");
    // Slot 0 on top, then 1, 2, ...; the last one's link is 0: the bottom.
    // taken_high_water() relies on this order.
    for (std::size_t index = 0; index < objects_max; ++index) {
      const std::size_t below = index + 1 < objects_max ? index + 2 : 0;
      // relaxed: before the pool is shared.
      links_[index].store(static_cast<std::uint32_t>(below), util::mo_relaxed);
    }
    head_.store(pack(0, 1), util::mo_relaxed);  // relaxed: before the pool is shared
  }
  object_pool_t(const object_pool_t&) = delete;
  object_pool_t& operator=(const object_pool_t&) = delete;

  // A default-constructed T, or nullptr when objects_max are taken.
  [[nodiscard]] T* take() {
    T* object = nullptr;
    return take_up_to(&object, 1) == 1 ? object : nullptr;
  }

  // Up to `count` default-constructed Ts into out[0, n), the top n slots of
  // the free list taken with one CAS; returns n, 0 when the pool is empty.
  // What a per-thread cache refills itself with (comp/cq.hpp).
  [[nodiscard]] std::size_t take_up_to(T** out, std::size_t count) {
    LCI_ASSERT(count > 0, "taking no objects");
    // acquire: pairs with the release CAS in give_back_all() [G]. Every
    // change of head_ is a read-modify-write, so this load continues the
    // release sequence of every give_back before it: the links of all the
    // slots below the top read below are the ones their givers wrote. [T1]
    std::uint64_t head = head_.load(util::mo_acquire);
    while (true) {
      std::size_t taken = 0;
      std::uint32_t below = top_of(head);
      std::uint32_t lent_max = 0;  // the highest slot taken, + 1
      while (taken < count && below != 0) {
        out[taken++] = static_cast<T*>(static_cast<void*>(slots_[below - 1].bytes));
        // Equivalent mutants: bound. At equality both arms are the same value
        // (tools/mutate_records/2026-11-27-runs-05-28.md, run 6).
        lent_max = below > lent_max ? below : lent_max;
        // relaxed: ordered by [T1]/[T2]. A link written since the load of
        // head (its slot taken and given back meanwhile) comes with a new
        // version of head_, so the CAS below fails on it; the count bounds
        // the walk over such a stale link.
        below = links_[below - 1].load(util::mo_relaxed);
      }
      if (taken == 0) return 0;
      // acquire on success: the objects' last give_back (their
      // destruction) happens before this taker constructs them. [T2]
      // Equivalent mutants: cas_weak. A spurious failure reloads the same head and repeats
      // the walk: a weak CAS would do in this loop (tools/mutate_records/2026-11-27-runs-05-28.md,
      // run 13).
      if (head_.compare_exchange_strong(head, pack(next_version(head), below), util::mo_acquire,
                                        util::mo_acquire)) {
        note_taken(lent_max, taken);
        for (std::size_t i = 0; i < taken; ++i) out[i] = ::new (static_cast<void*>(out[i])) T();
        return taken;
      }
      // head was reloaded by the failed CAS: another take or give_back
      // succeeded, so the loop cannot livelock.
    }
  }

  // Destroys `object` (taken from this pool) and frees its slot.
  void give_back(T* object) { give_back_all(&object, 1); }

  // Destroys objects[0, count) (each taken from this pool) and frees their
  // slots with one CAS; objects[0] ends on top of the free list.
  void give_back_all(T* const* objects, std::size_t count) {
    LCI_ASSERT(count > 0, "giving back no objects");
    for (std::size_t i = 0; i < count; ++i) {
      LCI_ASSERT(objects[i] != nullptr, "giving back no object");
      LCI_ASSERT(owns(objects[i]), "an object given back to a pool it is not from");
      objects[i]->~T();
      // relaxed: the chain is private until the release CAS below
      // publishes it.
      if (i > 0) links_[index_of(objects[i - 1])].store(index_of(objects[i]) + 1, util::mo_relaxed);
    }
#if defined(LCI_DEBUG) && LCI_DEBUG
    // relaxed: a count for the check only; the slots travel through head_.
    const std::size_t lent_before = lent_count_.fetch_sub(count, util::mo_relaxed);
    LCI_ASSERT(lent_before >= count, "an object pool given back more than it lent");
#endif
    const std::uint32_t first = index_of(objects[0]);
    const std::uint32_t last = index_of(objects[count - 1]);
    std::uint64_t head = head_.load(util::mo_relaxed);  // relaxed: the CAS validates it
    while (true) {
      // relaxed: published by the release CAS below.
      links_[last].store(top_of(head), util::mo_relaxed);
      // release: pairs with the acquires in take_up_to() [T1][T2]. [G] The
      // broken variant "object_pool_relaxed_give_back" (model check only)
      // drops it: the next taker's use of an object races with ours.
      const util::memory_order order =
          util::mutated("object_pool_relaxed_give_back") ? util::mo_relaxed : util::mo_release;
      // Equivalent mutants: cas_weak. A spurious failure reloads the same head and re-links:
      // a weak CAS would do in this loop (tools/mutate_records/2026-11-27-runs-05-28.md, run 13).
      if (head_.compare_exchange_strong(head, pack(next_version(head), first + 1), order,
                                        util::mo_relaxed)) {
        return;
      }
      // As in take_up_to(): a failure means another thread's operation
      // succeeded.
    }
  }

  // Whether `object` lies in this pool's slots.
  bool owns(const T* object) const {
    const auto* slot = reinterpret_cast<const slot_t*>(object);
    return slot >= &slots_[0] && slot < &slots_[0] + objects_max_;
  }
  std::size_t objects_max() const { return objects_max_; }
  // Objects taken now: objects_max less the free list's length. Only while
  // nothing takes or gives back concurrently (a test's or a teardown's
  // look); it walks the list.
  std::size_t taken_count() const {
    std::size_t free_count = 0;
    // relaxed: quiescent by precondition.
    for (std::uint32_t top = top_of(head_.load(util::mo_relaxed)); top != 0;
         top = links_[top - 1].load(util::mo_relaxed)) {
      ++free_count;
      LCI_ASSERT(free_count <= objects_max_, "an object pool's free list has a cycle");
    }
    return objects_max_ - free_count;
  }
  // The most objects taken at once so far (what a test of bounded memory
  // reads): the slots ever lent, since the free list is a stack that starts
  // in slot order (0 on top). A slot is lent for the first time only from
  // the top of the never-lent slots below every slot given back, so at that
  // moment every slot lent before it is out as well: the k-th distinct slot
  // is lent exactly when k objects are out at once. Exact while nothing runs
  // concurrently.
  std::size_t taken_high_water() const { return slots_lent_.load(util::mo_relaxed); }

 private:
  static constexpr std::uint32_t index_none = ~std::uint32_t{0};

  struct slot_t {
    alignas(T) unsigned char bytes[sizeof(T)];
  };

  static std::uint64_t pack(std::uint32_t version, std::uint32_t top) {
    return (std::uint64_t{version} << 32) | top;
  }
  static std::uint32_t version_of(std::uint64_t head) {
    return static_cast<std::uint32_t>(head >> 32);
  }
  static std::uint32_t top_of(std::uint64_t head) { return static_cast<std::uint32_t>(head); }
  // The broken variant "object_pool_no_version" (model check only) keeps
  // the version: the ABA interleaving then hands one slot to two takers.
  static std::uint32_t next_version(std::uint64_t head) {
    return version_of(head) + (util::mutated("object_pool_no_version") ? 0 : 1);
  }

  std::uint32_t index_of(const T* object) const {
    return static_cast<std::uint32_t>(reinterpret_cast<const slot_t*>(object) - &slots_[0]);
  }

  // `lent_max`: the highest slot just taken, + 1; `taken`: how many.
  void note_taken(std::uint32_t lent_max, std::size_t taken) {
    // relaxed: a mark for tests, ordered by nothing. Written only the first
    // time a slot is lent, so in steady state a take reads a line nobody
    // writes instead of counting on a shared one; ends as each failure means
    // another thread raised the mark.
    std::uint32_t lent = slots_lent_.load(util::mo_relaxed);
    // Equivalent mutants: bound. At equality the CAS writes the mark's own value again: one
    // write more, the same mark (tools/mutate_records/2026-11-27-runs-05-28.md, run 6).
    while (lent_max > lent &&
           !slots_lent_.compare_exchange_weak(lent, lent_max, util::mo_relaxed, util::mo_relaxed)) {
    }
#if defined(LCI_DEBUG) && LCI_DEBUG
    // The debug builds count what is out, so that a give_back of something
    // never lent (a double give_back) stops at the assertion instead of
    // corrupting the free list. relaxed: a count, ordered by nothing.
    const std::size_t lent_now = lent_count_.fetch_add(taken, util::mo_relaxed) + taken;
    LCI_ASSERT(lent_now <= objects_max_, "an object pool over its bound");
#else
    (void)taken;
#endif
  }

  const std::size_t objects_max_;
  const std::unique_ptr<slot_t[]> slots_;
  // links_[i]: the index + 1 of the slot under slot i on the free list.
  const std::unique_ptr<util::atomic<std::uint32_t>[]> links_;
  // Written by every taker and giver; the mark (read by every taker,
  // written rarely) on its own line so the head's stays short.
  alignas(util::cache_line_bytes) util::atomic<std::uint64_t> head_{0};  // version << 32 | top + 1
  alignas(util::cache_line_bytes) util::atomic<std::uint32_t> slots_lent_{0};
#if defined(LCI_DEBUG) && LCI_DEBUG
  util::atomic<std::size_t> lent_count_{0};
#endif
};

}  // namespace lci::util
