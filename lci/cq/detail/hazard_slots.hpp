// hazard_slots_t<T>: hazard pointers (Michael, TPDS'04) for one structure,
// with slots claimed per operation rather than owned per thread.
//
// An operation claims one slot for its whole duration (acquire ... release)
// and keeps in it the one T it may dereference. A thread starts probing at
// slot thread_index() % hazard_slots_max; a slot is claimed by a CAS from
// null, so two threads that share a start index never share a slot, and
// thread indices (never reused) need no registration or cleanup.
//
// Thread safety: all methods may run concurrently; a claimed slot index is
//                used only by the operation that claimed it.
// Blocking:      acquire() spins only when all hazard_slots_max slots are
//                claimed at once, i.e. more operations are in flight than
//                slots; each slot is freed when its operation returns.
// Allocation:    none (slots are inline).
// Limits:        hazard_slots_max concurrent operations without waiting.
//
// Protocol [H]: publish p in the slot (seq_cst), then re-load the source
// (seq_cst). A reclaimer unlinks p (seq_cst RMW) before scanning the slots
// (seq_cst loads). In the single total order of these seq_cst operations,
// either the re-load comes before the unlink (then the publication precedes
// the scan, which sees p and keeps it) or it comes after (then it returns a
// different pointer and we retry). release() stores null with release
// ordering, so every access we made to p happens-before the reclaimer's reuse
// once its scan (seq_cst, hence acquire) reads that null.
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
// Model checking only (tests/cq/lcrq_*model_test.cpp, at most 4 threads): the
// same protocol with 4 slots, so a reclaimer's scan is 4 scheduling points
// instead of 64.
inline constexpr std::size_t hazard_slots_max = 4;
#else
inline constexpr std::size_t hazard_slots_max = 64;
#endif

template <typename T>
class hazard_slots_t {
 public:
  hazard_slots_t() = default;
  hazard_slots_t(const hazard_slots_t&) = delete;
  hazard_slots_t& operator=(const hazard_slots_t&) = delete;

  // Claims a slot and returns {slot index, protected current value of
  // source}. source never holds null.
  std::pair<std::size_t, T*> acquire(const util::atomic<T*>& source);
  // Re-points a claimed slot at source's current value and returns it.
  T* protect(std::size_t slot, const util::atomic<T*>& source);
  void release(std::size_t slot);
  // Whether any slot other than except_slot protects p.
  bool is_protected(const T* p, std::size_t except_slot) const;
  bool all_released() const;

 private:
  struct alignas(util::cache_line_bytes) slot_t {
    util::atomic<T*> hazard{nullptr};
  };
  static_assert(alignof(slot_t) == util::cache_line_bytes &&
                    sizeof(slot_t) % util::cache_line_bytes == 0,
                "slots are written by different threads: one line each");

  T* validate(std::size_t slot, T* published, const util::atomic<T*>& source);

  slot_t slots_[hazard_slots_max];
};

template <typename T>
std::pair<std::size_t, T*> hazard_slots_t<T>::acquire(
    const util::atomic<T*>& source) {
  const std::size_t start = util::thread_index() % hazard_slots_max;
  // Waits only while every slot is claimed (see Blocking above); each probe
  // round is bounded by hazard_slots_max.
  for (;;) {
    // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do: the value is published
    // and then re-loaded by [H] in validate(); only the re-load decides
    // (docs/verification.md, run 5).
    T* current = source.load(util::mo_seq_cst);
    LCI_ASSERT(current != nullptr, "hazard source holds null");
    // Equivalent mutants: bound. The slot index is taken modulo hazard_slots_max, so one
    // probe more tries the start slot again, and a claim there is as good as any other
    // (docs/verification.md, run 10).
    for (std::size_t probe = 0; probe < hazard_slots_max; ++probe) {
      const std::size_t slot = (start + probe) % hazard_slots_max;
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
  // decides (docs/verification.md, run 5).
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
  for (std::size_t slot = 0; slot < hazard_slots_max; ++slot) {
    // relaxed: only called with no concurrent operations (teardown).
    if (slots_[slot].hazard.load(util::mo_relaxed) != nullptr) return false;
  }
  return true;
}

}  // namespace lci::cq::detail
