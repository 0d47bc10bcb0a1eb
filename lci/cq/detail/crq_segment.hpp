// crq_segment_t: one ring of the LCRQ, i.e. Morrison & Afek's CRQ (PPoPP'13),
// a bounded, closable MPMC ring of non-null void* (private to lcrq_t).
//
// Thread safety: enqueue/dequeue may run concurrently from any threads.
//                reset/poison/unpoison only while the segment is private
//                (freshly taken from the pool, or proven unreachable).
// Blocking:      never.
// Ownership:     a value belongs to the segment from a successful enqueue
//                until the dequeue that returns it.
// Allocation:    the cell array, once, in the constructor.
// Limits:        ring_size cells. enqueue closes the ring and returns false
//                when the ring looks full (tail - head >= ring_size) or after
//                enqueue_attempts_max failed tickets; a closed ring never
//                accepts another value, dequeue drains it.
// Progress:      enqueue is wait-free (at most enqueue_attempts_max tickets);
//                dequeue is lock-free (see the loop comments).
// Linearization: enqueue at its successful cell CAS2 [E]; dequeue that returns
//                a value at its successful cell CAS2 [D]; an empty dequeue at
//                its first tail load [P2] that sees tail <= head (no ticket
//                taken), or else at its tail load [T] that sees tail <=
//                ticket + 1.
//
// Cell layout (16 bytes, one atomic_u64_pair):
//   lo = safe bit (63) | index (62..0), hi = value (0 = empty, written "⊥").
// Counter layout: head_ = next dequeue ticket; tail_ = next enqueue ticket,
// with the CLOSED flag in bit 63. Every counter and cell access is seq_cst
// (on x86 a seq_cst load is a plain load and RMWs are full barriers anyway):
// the CRQ's argument (an enqueuer compares head with its ticket, a dequeuer
// compares tail with its ticket) assumes one total order over them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LCI_CQ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LCI_CQ_ASAN 1
#endif
#if defined(LCI_CQ_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace lci::cq::detail {

inline constexpr std::uint64_t crq_closed_bit = std::uint64_t{1} << 63;
inline constexpr std::uint64_t crq_safe_bit = std::uint64_t{1} << 63;
inline constexpr std::uint64_t crq_index_mask = ~crq_safe_bit;
// Failed tickets after which an enqueuer closes the ring (the paper's
// starvation test): the next enqueue goes to a fresh segment instead.
inline constexpr int enqueue_attempts_max = 16;
// crq_segment_t::cell_of(): consecutive tickets spread over 2^3 = 8 blocks
// of the ring (fewer in a ring of fewer than 8 cells).
inline constexpr unsigned cells_spread_bits_max = 3;

// A counter alone on its cache line.
struct alignas(util::cache_line_bytes) crq_counter_t {
  util::atomic<std::uint64_t> value{0};
};
static_assert(alignof(crq_counter_t) == util::cache_line_bytes &&
                  sizeof(crq_counter_t) % util::cache_line_bytes == 0,
              "each CRQ counter needs its own cache line");

class crq_segment_t {
 public:
  explicit crq_segment_t(std::size_t ring_size)
      : ring_size_(ring_size),
        ring_mask_(ring_size - 1),
        cells_(new util::atomic_u64_pair[ring_size]),
        spread_bits_(std::min(cells_spread_bits_max, ring_bits(ring_size))),
        spread_shift_(ring_bits(ring_size) - spread_bits_) {
    LCI_ASSERT(ring_size >= 2, "crq ring_size must be at least 2");
    LCI_ASSERT((ring_size & (ring_size - 1)) == 0,
               "crq ring_size must be a power of two");
    reset(nullptr);
  }
  ~crq_segment_t() { delete[] cells_; }
  crq_segment_t(const crq_segment_t&) = delete;
  crq_segment_t& operator=(const crq_segment_t&) = delete;

  // Makes the segment empty and open, or holding just first_value (the
  // paper's "new CRQ initialised with x"). Private: no concurrent access.
  void reset(void* first_value);
  // false: the ring is closed (now or before); the value was not stored.
  [[nodiscard]] bool enqueue(void* value);
  // nullptr: the ring was empty at [P2] or [T].
  [[nodiscard]] void* dequeue();

  // The successor in the LCRQ list: null until one CAS sets it, once per
  // incarnation of the segment, and only after the ring is closed.
  util::atomic<crq_segment_t*>& next() { return next_; }
  // Link in lcrq_t's retired stack; used only while the segment is unlinked.
  util::atomic<crq_segment_t*>& retired_next() { return retired_next_; }
  std::size_t ring_size() const { return ring_size_; }
  bool is_closed() const {
    // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do: only debug assertions
    // call this, each after setting CLOSED itself, seeing it through its own RMW on tail_, or
    // reaching the segment through a next published after the close
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
    return (tail_.value.load(util::mo_seq_cst) & crq_closed_bit) != 0;
  }

  // ASan: a pooled segment is poisoned, so any access by a thread that still
  // holds a stale pointer (a reclamation bug) is reported at once.
  void poison();
  void unpoison();

 private:
  void* take_cell(std::uint64_t ticket);
  void fix_state();
  util::atomic_u64_pair& cell_of(std::uint64_t ticket) const;
  static unsigned ring_bits(std::size_t ring_size) {
    return static_cast<unsigned>(__builtin_ctzll(ring_size));
  }

  crq_counter_t head_;  // dequeuers F&A it
  crq_counter_t tail_;  // enqueuers F&A it; bit 63 = CLOSED
  // Written once per incarnation (append) and by the retiring thread.
  alignas(util::cache_line_bytes) util::atomic<crq_segment_t*> next_{nullptr};
  util::atomic<crq_segment_t*> retired_next_{nullptr};
  // Read-only after construction: its own line, away from written words.
  alignas(util::cache_line_bytes) const std::size_t ring_size_;
  const std::uint64_t ring_mask_;
  util::atomic_u64_pair* const cells_;
  // cell_of(): how many low ticket bits pick the cell's block, and where.
  const unsigned spread_bits_;
  const unsigned spread_shift_;
};
static_assert(alignof(crq_segment_t) == util::cache_line_bytes,
              "head, tail and next of a segment sit on separate lines");

// The cell of a ticket: a fixed permutation of ticket mod ring_size, so
// the algorithm (which only needs tickets t and t + ring_size to share a
// cell, and no others) is unchanged. Consecutive tickets go to cells
// ring_size / 8 apart: threads that take neighbouring tickets at once (every
// pusher and popper of a busy queue) then write different lines, where with
// t mod ring_size four of them shared each 64-byte line and the line pair
// the adjacent-line prefetcher moves together. Tickets t and t + 8 share a
// line. Against padding each cell to 128 bytes, as the paper's code does,
// this keeps the ring at 16 bytes a cell (docs/design/cq.md, "Layout";
// measured in docs/bench_upstream.md, "The LCRQ's cells, 2026-11-28").
inline util::atomic_u64_pair& crq_segment_t::cell_of(std::uint64_t ticket) const {
  const std::uint64_t residue = ticket & ring_mask_;
  const std::uint64_t block = residue & ((std::uint64_t{1} << spread_bits_) - 1);
  return cells_[(block << spread_shift_) | (residue >> spread_bits_)];
}

inline void crq_segment_t::reset(void* first_value) {
  const auto first_bits = reinterpret_cast<std::uintptr_t>(first_value);
  // relaxed (all four): the segment is private here; it is published later by
  // the seq_cst CAS that links it (lcrq_t::append) or by the constructor.
  head_.value.store(0, util::mo_relaxed);
  tail_.value.store(first_value != nullptr ? 1 : 0, util::mo_relaxed);
  next_.store(nullptr, util::mo_relaxed);
  retired_next_.store(nullptr, util::mo_relaxed);
  cell_of(0).init({crq_safe_bit | 0, first_bits});
  for (std::uint64_t i = 1; i < ring_size_; ++i) {
    cell_of(i).init({crq_safe_bit | i, 0});
  }
  LCI_DEBUG_ASSERT(cell_of(ring_mask_).load_lo() == (crq_safe_bit | ring_mask_),
                   "reset left a cell with a wrong index");
}

inline bool crq_segment_t::enqueue(void* value) {
  LCI_ASSERT(value != nullptr, "crq enqueue of a null value");
  const auto value_bits = reinterpret_cast<std::uintptr_t>(value);
  // Bounded: at most enqueue_attempts_max tickets, then the ring is closed.
  for (int attempts = 1;; ++attempts) {
    const std::uint64_t tail_raw = tail_.value.fetch_add(1, util::mo_seq_cst);
    if ((tail_raw & crq_closed_bit) != 0) return false;
    const std::uint64_t ticket = tail_raw;
    util::atomic_u64_pair& cell = cell_of(ticket);
    const std::uint64_t hi = cell.load_hi();
    const std::uint64_t lo = cell.load_lo();
    // An empty cell whose index is not ahead of us, and either safe or no
    // dequeuer has passed our ticket yet (else one already gave up on it).
    // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do for the head load. It
    // decides only once our ticket's dequeuer has CASed this cell: before that, its CAS2 and
    // ours order the two, and it takes what we store. After it, our CAS2 succeeds only on a
    // state read from that CAS's release sequence (every later cell write is a CAS2, a full
    // barrier), so its ticket happens before this load, which returns more than our ticket
    // whatever its order (//tests/cq:cq_litmus_test checks that step under RC11;
    // tools/mutate_records/2026-11-28-runs-29-36.md).
    if (hi == 0 && (lo & crq_index_mask) <= ticket &&
        ((lo & crq_safe_bit) != 0 ||
         head_.value.load(util::mo_seq_cst) <= ticket) &&
        cell.compare_exchange({lo, hi}, {crq_safe_bit | ticket, value_bits})) {
      return true;  // [E]
    }
    // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do: a stale head only makes
    // the ring look fuller, which closes it early (always allowed: the value goes into a new
    // segment), and a newer one only costs a retry (tools/mutate_records/2026-11-27-runs-05-28.md,
    // run 5).
    const std::uint64_t head = head_.value.load(util::mo_seq_cst);
    const bool full = static_cast<std::int64_t>(ticket - head) >=
                      static_cast<std::int64_t>(ring_size_);
    // Equivalent mutants: bound. enqueue_attempts_max tunes when a starving ring gives up
    // and closes; one attempt more is the same algorithm with a limit of 17 (still
    // wait-free), and closing is always allowed (tools/mutate_records/2026-11-27-runs-05-28.md,
    // run 10).
    if (full || attempts >= enqueue_attempts_max) {
      // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do for the close: only
      // RMWs on tail_ act on CLOSED, and they read the latest value whatever the order; the
      // append that follows is published by the CAS on next
      // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
      tail_.value.fetch_or(crq_closed_bit, util::mo_seq_cst);
      return false;
    }
  }
}

inline void* crq_segment_t::dequeue() {
  // An empty ring answers without taking a ticket: the fetch-and-add below
  // would write head_ (every poll of an idle queue would then move its
  // line) and leave fix_state() to repair tail_. seq_cst [P2], as [T]
  // below: an enqueuer ticket that precedes this load in the total order
  // must be seen. With tail <= head every ticket below tail has a dequeuer;
  // the values they have yet to take are theirs, so the ring holds none for
  // us: empty, linearized at [P2]. (A stale head [P1] is smaller, which only
  // makes this answer rarer.)
  // (Broken variant, tests/cq: relaxed, as for [T].)
  const util::memory_order empty_tail_order =
      util::mutated("crq_relaxed_empty_tail") ? util::mo_relaxed : util::mo_seq_cst;
  {
    // Equivalent mutants: mo_weaken. Acquire would do: a stale head is smaller, and acquire
    // orders the F&A that wrote a newer one before [P2]
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
    const std::uint64_t head = head_.value.load(util::mo_seq_cst);                   // [P1]
    const std::uint64_t tail = tail_.value.load(empty_tail_order) & ~crq_closed_bit;  // [P2]
    if (tail <= head) return nullptr;
  }
  // Lock-free: a lap ends without a value only if the cell of our ticket was
  // empty although tail was beyond it, i.e. an enqueuer holds that ticket and
  // has not stored yet. That enqueuer then fails and retries; after
  // enqueue_attempts_max such failures it closes the ring, after which the
  // tail only grows by the finitely many late F&As that see CLOSED.
  for (;;) {
    // Release: [P1] of another dequeue must not see this ticket before the
    // enqueues that came before it (cq_litmus_test). seq_cst is stronger
    // than needed, kept with every other counter access (class comment).
    // Equivalent mutants: mo_weaken. acq_rel would do: no reader of head_ uses this ticket's
    // place in S. Other tickets are RMWs (the latest value whatever the order); [P1] needs
    // the release; the enqueue's head check is ordered through the cell's CAS2s (its marker);
    // the enqueue's full test and fix_state() use only the value
    // (tools/mutate_records/2026-11-28-runs-29-36.md).
    const std::uint64_t ticket = head_.value.fetch_add(1, util::mo_seq_cst);
    LCI_DEBUG_ASSERT(ticket < crq_closed_bit, "crq head overflow");
    if (void* value = take_cell(ticket)) {
      // Broken variant (tests/cq): burn one more ticket, skipping a cell.
      if (util::mutated("lcrq_dequeue_skips_cell")) {
        // Equivalent mutants: mo_weaken, mo_to_relaxed. Dead code outside this broken
        // variant, whose targets tools/mutate does not run
        // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
        head_.value.fetch_add(1, util::mo_seq_cst);
      }
      return value;
    }
    // seq_cst: [T] must see every enqueuer ticket F&A that precedes it in
    // the total order, even one that created no happens-before with us
    // (empty_tail_order: relaxed only in the broken variant above).
    const std::uint64_t tail = tail_.value.load(empty_tail_order) & ~crq_closed_bit;  // [T]
    if (tail <= ticket + 1) {
      fix_state();
      return nullptr;
    }
  }
}

// The paper's dequeue inner loop on the cell of `ticket`: take the value
// stored for this ticket, or make sure no enqueuer can store it later.
inline void* crq_segment_t::take_cell(std::uint64_t ticket) {
  util::atomic_u64_pair& cell = cell_of(ticket);
  const std::uint64_t next_lap = ticket + ring_size_;
  // No livelock: a CAS2 fails only if another thread changed the cell, and
  // while the index stays <= ticket a cell can change only a bounded number of
  // times (store, unsafe mark, take; each take raises the index by ring_size).
  for (;;) {
    const std::uint64_t hi = cell.load_hi();
    const std::uint64_t lo = cell.load_lo();
    const std::uint64_t index = lo & crq_index_mask;
    const std::uint64_t safe = lo & crq_safe_bit;
    if (index > ticket) return nullptr;  // a later lap owns the cell
    if (hi != 0) {
      if (index == ticket) {
        if (cell.compare_exchange({lo, hi}, {safe | next_lap, 0})) {  // [D]
          return reinterpret_cast<void*>(hi);
        }
      } else if (cell.compare_exchange({lo, hi}, {index, hi})) {
        return nullptr;  // an older lap's value: mark the cell unsafe
      }
    } else if (cell.compare_exchange({lo, hi}, {safe | next_lap, 0})) {
      return nullptr;  // empty: advance its index so our enqueuer fails
    }
  }
}

// Head overtook tail (empty dequeues): pull tail up to head so that later
// enqueuers do not take tickets dequeuers have already passed.
inline void crq_segment_t::fix_state() {
  // Lock-free: a lap repeats only when tail_ changed between our reads, i.e.
  // another operation completed a step.
  for (;;) {
    // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do: tail_raw is the CAS's
    // expected value, so a stale one fails the CAS and the loop reads again
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
    const std::uint64_t tail_raw = tail_.value.load(util::mo_seq_cst);
    // Equivalent mutants: mo_weaken, mo_to_relaxed. Relaxed would do: any order reads at least
    // our caller's ticket + 1 (coherence after its own F&A), and a tail that high is all
    // fix_state must establish (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
    const std::uint64_t head = head_.value.load(util::mo_seq_cst);
    // Equivalent mutants: mo_weaken, mo_to_relaxed. Only a recheck: the CAS below decides
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
    if (tail_.value.load(util::mo_seq_cst) != tail_raw) continue;
    if (head <= (tail_raw & ~crq_closed_bit)) return;
    std::uint64_t expected = tail_raw;
    const std::uint64_t desired = head | (tail_raw & crq_closed_bit);
    // Equivalent mutants: cas_weak, cas_failure, mo_weaken, mo_to_relaxed. A spurious
    // failure, or a failure value read with acquire, only repeats the loop, which reads tail_
    // again (tools/mutate_records/2026-11-27-runs-05-28.md, run 5). Relaxed would do for the
    // success order too: the fixed tail's value is what counts, not its place in S. An enqueue
    // ticket is an RMW and reads the latest tail; a seq_cst load of tail_ that reads this value is
    // still ordered before every later seq_cst ticket by from-read; and nothing is published
    // through it (a dequeue reads head_ [P1] before tail_ [P2], never after). Kept seq_cst with the
    // other counter accesses (tools/mutate_records/2026-11-28-runs-29-36.md).
    if (tail_.value.compare_exchange_strong(expected, desired, util::mo_seq_cst,
                                            util::mo_seq_cst)) {
      return;
    }
  }
}

inline void crq_segment_t::poison() {
#if defined(LCI_CQ_ASAN)
  ASAN_POISON_MEMORY_REGION(cells_, ring_size_ * sizeof(util::atomic_u64_pair));
  ASAN_POISON_MEMORY_REGION(&head_, sizeof(head_));
  ASAN_POISON_MEMORY_REGION(&tail_, sizeof(tail_));
  ASAN_POISON_MEMORY_REGION(&next_, sizeof(next_));
#endif
}

inline void crq_segment_t::unpoison() {
#if defined(LCI_CQ_ASAN)
  ASAN_UNPOISON_MEMORY_REGION(cells_,
                              ring_size_ * sizeof(util::atomic_u64_pair));
  ASAN_UNPOISON_MEMORY_REGION(&head_, sizeof(head_));
  ASAN_UNPOISON_MEMORY_REGION(&tail_, sizeof(tail_));
  ASAN_UNPOISON_MEMORY_REGION(&next_, sizeof(next_));
#endif
}

}  // namespace lci::cq::detail
