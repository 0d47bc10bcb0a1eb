// segment_pool_t: where lcrq_t gets fresh ring segments and where unlinked
// ones wait until no hazard pointer protects them (private to lcrq_t).
//
// Thread safety: all methods may run concurrently, except destroy_all().
// Blocking:      never; every loop is bounded or lock-free (see each).
// Ownership:     a segment in the free array or the retired stack belongs to
//                the pool; take() hands one to the caller.
// Allocation:    take() allocates only when the free array is empty;
//                give_back() frees only when the free array is full.
// Limits:        free_segments_max recycled segments are kept; beyond that a
//                safe segment is deleted. The retired stack holds segments
//                that were protected when last checked: at most one per
//                hazard slot, plus those unlinked since the last drain.
//
// The free array is a fixed set of pointer slots: give_back CASes a segment
// into an empty slot, take exchanges a slot with null. An exchange hands the
// segment to exactly one taker, so there is no ABA as in a Treiber pop. The
// retired stack only ever pushes one node or detaches the whole list
// (exchange), which is ABA-free as well.
#pragma once

#include <cstddef>

#include "lci/cq/detail/crq_segment.hpp"
#include "lci/cq/detail/hazard_slots.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"

namespace lci::cq::detail {

#if defined(LCI_MODEL_CHECK)
// Model checking only (tests/cq/lcrq_model_test.cpp): one free slot, so that
// a few ring turnovers exercise both recycling and deletion (and Relacy sees
// any access to a deleted segment).
inline constexpr std::size_t free_segments_max = 1;
#else
inline constexpr std::size_t free_segments_max = 4;
#endif

class segment_pool_t {
 public:
  using hazards_t = hazard_slots_t<crq_segment_t>;

  segment_pool_t() = default;
  segment_pool_t(const segment_pool_t&) = delete;
  segment_pool_t& operator=(const segment_pool_t&) = delete;

  // A private, unpoisoned segment of ring_size cells (contents unspecified:
  // the caller resets it).
  crq_segment_t* take(std::size_t ring_size);
  // Returns a segment nobody else can reach or still reference.
  void give_back(crq_segment_t* segment);
  // `segment` was just unlinked by the caller (which holds except_slot):
  // recycle it once no other hazard slot protects it. Also re-checks the
  // segments retired earlier.
  void retire(crq_segment_t* segment, const hazards_t& hazards,
              std::size_t except_slot);
  // Teardown (no concurrent calls): deletes every pooled segment.
  void destroy_all();
  // Segments take() allocated so far (for tests: recycling bounds it).
  std::size_t allocated_count() const {
    return allocated_count_.load(util::mo_relaxed);  // relaxed: a statistic
  }

 private:
  void push_retired(crq_segment_t* segment);

  // Touched once per segment turnover only, so one shared line is enough.
  alignas(util::cache_line_bytes) util::atomic<crq_segment_t*>
      free_[free_segments_max];
  util::atomic<crq_segment_t*> retired_head_{nullptr};
  util::atomic<std::size_t> allocated_count_{0};
};

inline crq_segment_t* segment_pool_t::take(std::size_t ring_size) {
  for (std::size_t i = 0; i < free_segments_max; ++i) {  // bounded
    // relaxed: a cheap look before the exchange.
    if (free_[i].load(util::mo_relaxed) == nullptr) continue;
    // acquire: pairs with the release CAS in give_back() [F].
    crq_segment_t* segment = free_[i].exchange(nullptr, util::mo_acquire);
    if (segment != nullptr) {
      segment->unpoison();
      LCI_ASSERT(segment->ring_size() == ring_size,
                 "pooled segment of another ring size");
      return segment;
    }
  }
  // relaxed: a statistic, read by tests after the threads joined.
  allocated_count_.fetch_add(1, util::mo_relaxed);
  return new crq_segment_t(ring_size);
}

inline void delete_segment(crq_segment_t* segment) {
  segment->unpoison();
  delete segment;
}

inline void segment_pool_t::give_back(crq_segment_t* segment) {
  LCI_ASSERT(segment != nullptr, "give_back(null)");
  segment->poison();
  for (std::size_t i = 0; i < free_segments_max; ++i) {  // bounded
    crq_segment_t* expected = nullptr;
    // Strong: a spurious failure would pass over an empty slot, and a pool
    // whose free array has room must keep the segment ("Allocation" above;
    // Lcrq.SegmentsAreRecycled under --config=spurious_cas counts it).
    if (free_[i].compare_exchange_strong(
            expected, segment,
            util::mo_release,     // release: pairs with take()'s acquire [F]
            util::mo_relaxed)) {  // relaxed: a full slot publishes nothing
      return;
    }
  }
  delete_segment(segment);  // free array full: bounded pool
}

inline void segment_pool_t::retire(crq_segment_t* segment,
                                   const hazards_t& hazards,
                                   std::size_t except_slot) {
  LCI_ASSERT(segment != nullptr, "retire(null)");
  LCI_DEBUG_ASSERT(segment->is_closed(), "retiring an open segment");
  // Detach everything retired before and re-check it (bounded by the list
  // we detached; segments still protected go back on the stack).
  // acquire: pairs with the release CAS in push_retired() [R].
  crq_segment_t* earlier = retired_head_.exchange(nullptr, util::mo_acquire);
  while (earlier != nullptr) {
    // relaxed: the link was written before the release push [R] we acquired.
    crq_segment_t* following = earlier->retired_next().load(util::mo_relaxed);
    if (hazards.is_protected(earlier, except_slot)) {
      push_retired(earlier);
    } else {
      give_back(earlier);
    }
    earlier = following;
  }
  if (hazards.is_protected(segment, except_slot)) {
    push_retired(segment);
  } else {
    give_back(segment);
  }
}

inline void segment_pool_t::push_retired(crq_segment_t* segment) {
  // relaxed: a first guess, corrected by the CAS.
  crq_segment_t* head = retired_head_.load(util::mo_relaxed);
  // Lock-free: the CAS fails only if another push or a drain succeeded.
  for (;;) {
    // relaxed: published by the release CAS below [R].
    segment->retired_next().store(head, util::mo_relaxed);
    if (retired_head_.compare_exchange_weak(
            head, segment,
            util::mo_release,     // release: pairs with retire()'s acquire [R]
            util::mo_relaxed)) {  // relaxed: we only retry with the new head
      return;
    }
  }
}

inline void segment_pool_t::destroy_all() {
  for (std::size_t i = 0; i < free_segments_max; ++i) {
    // relaxed: teardown, no concurrent calls.
    crq_segment_t* segment = free_[i].exchange(nullptr, util::mo_relaxed);
    if (segment != nullptr) delete_segment(segment);
  }
  // relaxed: teardown, no concurrent calls.
  crq_segment_t* segment = retired_head_.exchange(nullptr, util::mo_relaxed);
  while (segment != nullptr) {
    // relaxed: teardown, no concurrent calls.
    crq_segment_t* following = segment->retired_next().load(util::mo_relaxed);
    delete_segment(segment);
    segment = following;
  }
}

}  // namespace lci::cq::detail
