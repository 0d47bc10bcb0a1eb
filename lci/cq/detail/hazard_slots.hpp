// hazard_slots_t<T>: hazard pointers (Michael, TPDS'04) for one structure.
//
// An operation holds one slot for its whole duration (acquire ... release)
// and keeps in it the one T it may dereference. The slots come in two
// regions:
// - Owned: slot i belongs to the thread whose thread_index() is i (i <
//   hazard_owned_slots_max). One live thread at a time holds an index, and
//   an exited thread's index is handed on in an order that makes its uses
//   happen before the next holder's (util/thread_context.hpp), so no other
//   thread writes the slot concurrently and acquiring it takes no RMW. An owned slot stays
//   published after release(): the next operation of its thread that finds
//   the source still equal to what the slot holds skips the publication
//   altogether (see [H] below). The cost: a segment an owned slot still
//   names is not recycled until that thread's next operation re-points the
//   slot, at most one per owned slot (an exited thread's slot keeps its last
//   one until the next thread given its index operates, or the structure is
//   destroyed). That next thread may skip the publication too: the slot has
//   named the segment continuously since its validation, whoever did it.
// - Claimed: a thread with a higher index claims a slot of this region per
//   operation by a CAS from null, starting at index % hazard_claimed_slots_max,
//   and release() stores null. Two such threads never share a slot, and
//   nothing is registered or cleaned up when threads exit.
//
// Thread safety: all methods may run concurrently; a slot index returned by
//                acquire() is used only by that operation. A thread has at
//                most one operation in flight per hazard_slots_t (its owned
//                slot would otherwise serve two).
// Blocking:      acquire() spins only for a claimed slot, when all
//                hazard_claimed_slots_max of them are claimed at once; each is
//                freed when its operation returns.
// Allocation:    none (slots are inline).
// Limits:        hazard_owned_slots_max threads on the owned path; beyond
//                them, hazard_claimed_slots_max concurrent operations without
//                waiting.
//
// Protocol [H]: publish p in the slot (seq_cst), then re-load the source
// (seq_cst). A reclaimer unlinks p (seq_cst RMW) before scanning the slots
// (seq_cst loads). In the single total order of these seq_cst operations,
// either the re-load comes before the unlink (then the publication precedes
// the scan, which sees p and keeps it) or it comes after (then it returns a
// different pointer and we retry). An owned slot that still holds p from an
// earlier operation has been publishing p since that operation's
// publication, which its re-load (returning p) followed: no scan since can
// have missed p, so p is still the incarnation it validated, and a load of
// the source that returns p again needs no new publication. release() of a
// claimed slot stores null with release ordering, so every access we made
// to p happens-before the reclaimer's reuse once its scan (seq_cst, hence
// acquire) reads that null; an owned slot's next publication (seq_cst,
// hence release) does the same for the scan that reads it.
#pragma once

#include <cstddef>
#include <utility>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"
#include "lci/util/thread_context.hpp"

namespace lci::cq::detail {

#if defined(LCI_MODEL_CHECK)
// Model checking only (tests/cq/lcrq_*model_test.cpp, 2 to 4 threads): the
// same protocol with 2 slots of each region, so a reclaimer's scan is 4
// scheduling points instead of 128, and a suite's threads 2 and 3 take the
// claimed path while 0 and 1 own theirs.
inline constexpr std::size_t hazard_owned_slots_max = 2;
inline constexpr std::size_t hazard_claimed_slots_max = 2;
#else
inline constexpr std::size_t hazard_owned_slots_max = 64;
inline constexpr std::size_t hazard_claimed_slots_max = 64;
#endif
// Owned slots first: slot i is owned by thread index i.
inline constexpr std::size_t hazard_slots_max =
    hazard_owned_slots_max + hazard_claimed_slots_max;

template <typename T>
class hazard_slots_t {
 public:
  hazard_slots_t() = default;
  hazard_slots_t(const hazard_slots_t&) = delete;
  hazard_slots_t& operator=(const hazard_slots_t&) = delete;

  // Takes the calling thread's slot (owned) or claims one, and returns {slot
  // index, protected current value of source}. source never holds null.
  std::pair<std::size_t, T*> acquire(const util::atomic<T*>& source) {
    return acquire(source, util::thread_index());
  }
  // The same for a caller whose thread index is thread_index (tests reach
  // both regions from one thread with it).
  std::pair<std::size_t, T*> acquire(const util::atomic<T*>& source,
                                     std::size_t thread_index);
  // Re-points a held slot (owned or claimed) at source's current value and
  // returns it.
  T* protect(std::size_t slot, const util::atomic<T*>& source);
  // Ends the operation: a claimed slot is freed, an owned one stays
  // published (see the class comment).
  void release(std::size_t slot);
  // Whether any slot other than except_slot protects p.
  bool is_protected(const T* p, std::size_t except_slot) const;
  // Whether no claimed slot is held (owned slots stay published by design).
  bool all_released() const;

 private:
  struct alignas(util::cache_line_bytes) slot_t {
    util::atomic<T*> hazard{nullptr};
  };
  static_assert(alignof(slot_t) == util::cache_line_bytes &&
                    sizeof(slot_t) % util::cache_line_bytes == 0,
                "slots are written by different threads: one line each");

  std::pair<std::size_t, T*> acquire_owned(std::size_t slot,
                                           const util::atomic<T*>& source);
  std::pair<std::size_t, T*> claim(std::size_t thread_index,
                                   const util::atomic<T*>& source);
  T* validate(std::size_t slot, T* published, const util::atomic<T*>& source);

  slot_t slots_[hazard_slots_max];
};

template <typename T>
std::pair<std::size_t, T*> hazard_slots_t<T>::acquire(
    const util::atomic<T*>& source, std::size_t thread_index) {
  if (thread_index < hazard_owned_slots_max) return acquire_owned(thread_index, source);
  return claim(thread_index, source);
}

template <typename T>
std::pair<std::size_t, T*> hazard_slots_t<T>::acquire_owned(
    std::size_t slot, const util::atomic<T*>& source) {
  // seq_cst: when it returns what the slot already holds, this load is the
  // re-load of [H] for the publication an earlier operation of ours made.
  // Equivalent mutants: mo_weaken, mo_to_relaxed. A weaker load that returns
  // the held p still returns a segment no scan can free (the slot has named it
  // since its validated publication), only possibly an older one than the
  // source's newest: the LCRQ then finds it closed with a successor and
  // re-protects, as after any move of the source; any other value is
  // published and re-loaded below.
  T* current = source.load(util::mo_seq_cst);
  LCI_ASSERT(current != nullptr, "hazard source holds null");
  // relaxed: our own slot, which only this thread writes.
  // (Broken variant, tests/cq: trust a slot that holds any segment, leaving
  // the one just loaded unpublished.)
  T* const held = slots_[slot].hazard.load(util::mo_relaxed);
  if (held == current ||
      (util::mutated("lcrq_hazard_owned_trusts_slot") && held != nullptr)) {
    return {slot, current};
  }
  slots_[slot].hazard.store(current, util::mo_seq_cst);  // [H] publication
  return {slot, validate(slot, current, source)};
}

template <typename T>
std::pair<std::size_t, T*> hazard_slots_t<T>::claim(
    std::size_t thread_index, const util::atomic<T*>& source) {
  const std::size_t start = thread_index % hazard_claimed_slots_max;
  // Waits only while every claimed slot is taken (see Blocking above); each
  // probe round is bounded by hazard_claimed_slots_max.
  for (;;) {
    // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do: the value is published
    // and then re-loaded by [H] in validate(); only the re-load decides
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
    T* current = source.load(util::mo_seq_cst);
    LCI_ASSERT(current != nullptr, "hazard source holds null");
    // Equivalent mutants: bound. The slot index is taken modulo hazard_claimed_slots_max, so
    // one probe more tries the start slot again, and a claim there is as good as any other
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 10).
    for (std::size_t probe = 0; probe < hazard_claimed_slots_max; ++probe) {
      const std::size_t slot =
          hazard_owned_slots_max + (start + probe) % hazard_claimed_slots_max;
      T* expected = nullptr;
      if (slots_[slot].hazard.compare_exchange_strong(
              expected, current,
              util::mo_seq_cst,     // seq_cst: the publication of [H]
              util::mo_relaxed)) {  // relaxed: a taken slot publishes nothing
        return {slot, validate(slot, current, source)};
      }
    }
    util::spin_pause();
  }
}

template <typename T>
T* hazard_slots_t<T>::protect(std::size_t slot,
                              const util::atomic<T*>& source) {
  LCI_DEBUG_ASSERT(slot < hazard_slots_max, "hazard slot out of range");
  // Equivalent mutants: mo_weaken, mo_to_relaxed. As in acquire(): only the [H] re-load
  // decides (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
  T* current = source.load(util::mo_seq_cst);
  slots_[slot].hazard.store(current, util::mo_seq_cst);  // [H] publication
  return validate(slot, current, source);
}

template <typename T>
T* hazard_slots_t<T>::validate(std::size_t slot, T* published,
                               const util::atomic<T*>& source) {
  // Lock-free: a lap repeats only when source changed between our loads,
  // i.e. another operation advanced it.
  for (;;) {
    // Broken variant (tests/cq): trust the first load, i.e. publish without
    // re-reading the source; a reclaimer may already have scanned the slots.
    if (util::mutated("lcrq_hazard_no_revalidate")) return published;
    T* current = source.load(util::mo_seq_cst);  // [H] re-load
    if (current == published) return current;
    LCI_ASSERT(current != nullptr, "hazard source holds null");
    slots_[slot].hazard.store(current, util::mo_seq_cst);
    published = current;
  }
}

template <typename T>
void hazard_slots_t<T>::release(std::size_t slot) {
  LCI_ASSERT(slot < hazard_slots_max, "hazard slot out of range");
  if (slot < hazard_owned_slots_max) return;  // stays published
  // relaxed: our own claimed slot, only we write it while claimed.
  LCI_DEBUG_ASSERT(slots_[slot].hazard.load(util::mo_relaxed) != nullptr,
                   "release of an unclaimed hazard slot");
  // release: pairs with the seq_cst scan in is_protected(), see [H].
  slots_[slot].hazard.store(nullptr, util::mo_release);
}

template <typename T>
bool hazard_slots_t<T>::is_protected(const T* p,
                                     std::size_t except_slot) const {
  LCI_ASSERT(p != nullptr, "is_protected(null)");
  for (std::size_t slot = 0; slot < hazard_slots_max; ++slot) {
    if (slot == except_slot) continue;
    // seq_cst: the scan of [H].
    if (slots_[slot].hazard.load(util::mo_seq_cst) == p) return true;
  }
  return false;
}

template <typename T>
bool hazard_slots_t<T>::all_released() const {
  for (std::size_t slot = hazard_owned_slots_max; slot < hazard_slots_max; ++slot) {
    // relaxed: only called with no concurrent operations (teardown).
    if (slots_[slot].hazard.load(util::mo_relaxed) != nullptr) return false;
  }
  return true;
}

}  // namespace lci::cq::detail
