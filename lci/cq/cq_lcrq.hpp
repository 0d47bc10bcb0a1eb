// lcrq_t: an unbounded MPMC completion queue of non-null void*, the LCRQ of
// Morrison & Afek (PPoPP'13): a linked list of CRQ ring segments
// (detail/crq_segment.hpp). Paper §4.1.4: one of the two CQ implementations.
//
// Thread safety: push and pop may run concurrently from any threads; the
//                destructor must not run concurrently with anything.
// Blocking:      never, unless more than hazard_claimed_slots_max operations
//                of threads without an owned hazard slot (thread_index() >=
//                hazard_owned_slots_max) are in flight at once (then one spins
//                for a slot).
// Ownership:     the queue stores the pointer only; the pointee stays the
//                caller's. A value belongs to the queue from push until the
//                pop that returns it; values left at destruction are dropped.
// Allocation:    one segment and its cells at construction; on the data path
//                a segment only when a ring closes and the free array
//                (free_segments_max) is empty. Unlinked segments are
//                recycled once no hazard pointer protects them.
// Limits:        unbounded (push never fails); ring_size cells per segment;
//                see Blocking for hazard slots. Besides the list, up to one
//                retired segment per owned hazard slot waits for its thread's
//                next operation (detail/hazard_slots.hpp).
// Progress:      lock-free (CRQ operations as in the paper; list maintenance
//                retries only when another thread advanced the list).
// Linearization: push at the cell CAS2 that stores the value; a pop that
//                returns a value at the cell CAS2 that takes it; an empty pop
//                at the tail load of the head segment that finds it empty
//                while that segment has no successor.
//
// Memory reclamation: hazard pointers (detail/hazard_slots.hpp), one per
// operation, held from the first load of head_segment_ / tail_segment_ until
// the operation returns (a thread's owned slot also after it, so that its
// next operation on the same segment publishes nothing). The invariant
// "tail_segment_ is never behind head_segment_" (pop helps tail forward
// before moving head) makes a segment unreachable from both pointers once
// head moves past it; only then is it retired. See docs/design/cq.md.
#pragma once

#include <cstddef>

#include "lci/cq/detail/crq_segment.hpp"
#include "lci/cq/detail/hazard_slots.hpp"
#include "lci/cq/detail/segment_pool.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"

namespace lci::cq {

class lcrq_t {
 public:
  // cells per ring segment, power of two (asserted)
  explicit lcrq_t(std::size_t ring_size = 1024);
  ~lcrq_t();
  lcrq_t(const lcrq_t&) = delete;
  lcrq_t& operator=(const lcrq_t&) = delete;

  void push(void* value);  // value != nullptr (asserted); never fails
  [[nodiscard]] void* pop();  // nullptr when empty

  // Diagnostics for tests: segments allocated after construction. Recycling
  // keeps it bounded however many rings close.
  std::size_t segments_allocated_count() const {
    return pool_.allocated_count();
  }

 private:
  using segment_t = detail::crq_segment_t;
  struct alignas(util::cache_line_bytes) segment_pointer_t {
    util::atomic<segment_t*> value{nullptr};
  };
  static_assert(alignof(segment_pointer_t) == util::cache_line_bytes &&
                    sizeof(segment_pointer_t) % util::cache_line_bytes == 0,
                "head (poppers) and tail (pushers) on separate lines");

  bool append(segment_t* closed, void* value);
  void advance_head(segment_t* drained, segment_t* next, std::size_t slot);

  segment_pointer_t head_segment_;  // poppers advance it
  segment_pointer_t tail_segment_;  // pushers (and poppers helping) advance it
  detail::hazard_slots_t<segment_t> hazards_;
  detail::segment_pool_t pool_;
  alignas(util::cache_line_bytes) const std::size_t ring_size_;
};

inline lcrq_t::lcrq_t(std::size_t ring_size) : ring_size_(ring_size) {
  LCI_ASSERT(ring_size >= 2, "lcrq_t ring_size must be at least 2");
  LCI_ASSERT((ring_size & (ring_size - 1)) == 0,
             "lcrq_t ring_size must be a power of two");
  segment_t* first = new segment_t(ring_size);
  // relaxed: the queue is not shared yet; publishing it to other threads
  // (e.g. std::thread creation) synchronizes.
  head_segment_.value.store(first, util::mo_relaxed);
  tail_segment_.value.store(first, util::mo_relaxed);
  // One spare so the first ring turnover does not allocate.
  pool_.give_back(new segment_t(ring_size));
}

inline lcrq_t::~lcrq_t() {
  LCI_ASSERT(hazards_.all_released(), "lcrq_t destroyed during an operation");
  // relaxed: teardown, no concurrent operations (precondition).
  segment_t* segment = head_segment_.value.load(util::mo_relaxed);
  while (segment != nullptr) {
    // relaxed: teardown, no concurrent operations.
    segment_t* next = segment->next().load(util::mo_relaxed);
    delete segment;
    segment = next;
  }
  pool_.destroy_all();
}

inline void lcrq_t::push(void* value) {
  LCI_ASSERT(value != nullptr, "lcrq_t::push of a null value");
  auto [slot, segment] = hazards_.acquire(tail_segment_.value);
  // Lock-free: a lap ends without storing only if the segment already had a
  // successor or another pusher appended one first; either way the list (or
  // tail_segment_) advanced.
  for (;;) {
    // seq_cst: acquire publishes the successor; S also orders this read against a pop's
    // empty answer, which reads next() too (pop(); cq_litmus_test, two queues in
    // store-buffering shape).
    segment_t* next = segment->next().load(util::mo_seq_cst);
    if (next != nullptr) {
      segment_t* expected = segment;  // help a lagging tail forward
      // seq_cst: a move of the tail publishes `next` (release) and is in S, which the
      // reclaimer's hazard scan needs (advance_head()).
      // Equivalent mutants: cas_weak, cas_failure. The failure value is discarded, and a
      // spurious failure leaves the help to the next lap, which re-reads tail_segment_
      // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
      tail_segment_.value.compare_exchange_strong(
          expected, next, util::mo_seq_cst, util::mo_seq_cst);
    } else if (segment->enqueue(value) || append(segment, value)) {
      break;
    }
    segment = hazards_.protect(slot, tail_segment_.value);
  }
  hazards_.release(slot);
}

// `closed` refused the value: link a fresh segment that already holds it.
// false: another pusher linked its segment first; the caller retries there.
inline bool lcrq_t::append(segment_t* closed, void* value) {
  LCI_DEBUG_ASSERT(closed->is_closed(), "append after an open segment");
  segment_t* fresh = pool_.take(ring_size_);
  fresh->reset(value);
  segment_t* expected = nullptr;
  // seq_cst: publishes fresh's reset (and our value) to every thread that
  // later loads next() or tail_segment_; part of the total order of [H].
  // (Broken variant, tests/cq: relaxed, publishing nothing.)
  const util::memory_order link_order =
      util::mutated("lcrq_relaxed_next_link") ? util::mo_relaxed
                                              : util::mo_seq_cst;
  // Equivalent mutants: cas_weak, cas_failure. A spurious failure returns false and the
  // pusher retries from the tail, as when another append won; the failure value feeds only
  // the debug assertion below, which would flag that case
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
  if (!closed->next().compare_exchange_strong(expected, fresh, link_order,
                                              util::mo_seq_cst)) {
    LCI_DEBUG_ASSERT(expected != nullptr, "strong CAS failed spuriously");
    pool_.give_back(fresh);  // never published: no hazard can name it
    return false;
  }
  segment_t* tail_expected = closed;
  // seq_cst: as a pusher's help in push().
  // Equivalent mutants: cas_weak, cas_failure. The failure value is discarded; after a
  // spurious failure the next push helps the tail forward, or advance_head() does before
  // the head passes `closed` (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
  tail_segment_.value.compare_exchange_strong(
      tail_expected, fresh, util::mo_seq_cst, util::mo_seq_cst);
  return true;
}

inline void* lcrq_t::pop() {
  auto [slot, segment] = hazards_.acquire(head_segment_.value);
  void* value = nullptr;
  // Lock-free: a lap repeats only after head_segment_ moved past a closed,
  // drained segment (ours or by another popper).
  for (;;) {
    value = segment->dequeue();
    if (value != nullptr) break;
    // seq_cst: an empty answer must be in S before the link it did not see, or
    // it and a push that saw the link could both miss the other (cq_litmus_test).
    segment_t* next = segment->next().load(util::mo_seq_cst);
    if (next == nullptr) break;  // empty
    // A successor exists, so the segment is closed. Tickets taken before the
    // close may have stored values after our first try: try once more. An
    // empty answer now read a tail taken after the close, so every ticket
    // that could store has been claimed by some popper.
    // (Broken variant, tests/cq: skip the second try.)
    if (!util::mutated("lcrq_pop_no_second_try")) value = segment->dequeue();
    if (value != nullptr) break;
    advance_head(segment, next, slot);
    segment = hazards_.protect(slot, head_segment_.value);
  }
  hazards_.release(slot);
  return value;
}

inline void lcrq_t::advance_head(segment_t* drained, segment_t* next,
                                 std::size_t slot) {
  LCI_DEBUG_ASSERT(drained->is_closed(), "advancing past an open segment");
  // Keep tail_segment_ from lagging behind head_segment_: otherwise a pusher
  // could later move tail onto a segment that was already retired.
  segment_t* tail_expected = drained;
  // seq_cst, success and failure: whoever moved the tail off `drained` (this CAS, append()'s
  // or a pusher's help), that move and our read of it must precede our hazard scan in S, or
  // a pusher's [H] re-load could still read `drained` while the scan misses its slot
  // (//tests/cq:cq_litmus_test, the old tail's protection).
  // Equivalent mutants: cas_weak. A spurious failure leaves the tail on `drained`, which it
  // can be only while the pusher that appended `next` has yet to move it, and that pusher
  // protects `drained` until then (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
  tail_segment_.value.compare_exchange_strong(
      tail_expected, next, util::mo_seq_cst, util::mo_seq_cst);
  segment_t* head_expected = drained;
  // seq_cst: the unlink of [H]; it precedes the hazard scan in retire().
  // Equivalent mutants: cas_weak, cas_failure. The failure value is discarded; after a
  // spurious failure the pop's next lap finds `drained` again and retries the advance
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
  if (head_segment_.value.compare_exchange_strong(
          head_expected, next, util::mo_seq_cst, util::mo_seq_cst)) {
    pool_.retire(drained, hazards_, slot);  // we never touch drained again
  }
}

}  // namespace lci::cq
