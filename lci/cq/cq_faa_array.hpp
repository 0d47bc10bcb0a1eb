// basic_faa_array_t<Value>: a fixed-capacity MPMC completion queue of
// values built on a ticket ring (paper §4.1.4, the "FAA-based fixed-size
// array", the second CQ implementation next to lcrq_t). Each slot holds its
// value inline, so a queue of statuses (lci/comp/cq.hpp) copies them in and
// out without a node per status. faa_array_t is the queue of non-null
// void* (push asserts non-null; pop() answers nullptr when empty).
//
// Thread safety: push and pop may run concurrently from any threads; the
//                destructor must not run concurrently with anything.
// Blocking:      bounded spin: a push (pop) holding a ticket whose slot is
//                still being emptied (filled) by the previous lap's pop (the
//                matching push) waits for that operation's few remaining
//                instructions. It never waits for a future operation (the
//                one it waits for already holds its ticket), so it cannot
//                deadlock, but a descheduled peer delays it.
// Ownership:     values are copied in and out (Value is trivially
//                copyable); a pointer's pointee stays the caller's. A value
//                belongs to the queue from a push that returned true until
//                the pop that returns it.
// Allocation:    the slot array, once, at construction; never afterwards.
// Limits:        capacity values (1 <= capacity <= capacity_max). A push
//                returns false (and stores nothing) only if the queue holds
//                capacity values at its linearization point; a pop returns
//                nullptr only if the queue is empty at its linearization
//                point. Full and empty are linearizable, not approximate: a
//                value counts from its push's ticket to its pop's ticket.
// Progress:      taking a ticket is lock-free; a ticket holder is blocking
//                as above (not lock-free: see docs/design/cq.md).
//
// Algorithm. tail_ counts push tickets taken, head_ pop tickets, so the
// queue holds tail_ - head_ values. A push takes ticket t by a CAS
// tail_ t -> t + 1 [A] after reading tail_ = t [A1], then head_ = h [A2] with
// t - h < capacity; a pop takes ticket h by a CAS head_ h -> h + 1 [B] after
// reading head_ = h [B1], then tail_ = t [B2] with t > h. An operation thus
// never takes a ticket it cannot use, and 0 <= tail_ - head_ <= capacity
// always holds (I). Slot t % slots_count carries a sequence number: t means
// "free for push t", t + 1 "full for pop t", and pop t frees it for push
// t + slots_count. slots_count is capacity rounded up to a power of two (a
// mask instead of a division) and at least 2 (so that t + 1 and
// t + slots_count differ); the tickets still enforce capacity.
//
// Tickets are taken by CAS rather than fetch-and-add (the paper's name is
// kept): a fetch-and-add ticket cannot be refused when the queue is full. A
// separate admission counter in front of fetch-and-add tickets (this
// queue's earlier design) makes full/empty non-linearizable: a push admitted
// but not yet holding its ticket makes the queue look full while its value's
// place in FIFO order is still open (docs/design/cq.md, "FAA array").
//
// Linearization, at points of the single total order S of the seq_cst
// accesses to tail_ and head_: a successful push at its CAS [A]; a
// successful pop at its CAS [B] (push h took ticket h before, as the pop read
// tail_ > h; the pop may still wait for that push to publish the value). A
// full push at [A2]: tail_ only grows, so at [A2] the queue holds at least
// t - h >= capacity values, by (I) exactly capacity. An empty pop at [B2]:
// head_ only grows and never passes tail_, so head_ = h = tail_ at [B2].
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/backoff.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"

namespace lci::cq {

template <typename Value>
class basic_faa_array_t {
  static_assert(std::is_trivially_copyable_v<Value>,
                "slots copy values in and out");

 public:
  static constexpr std::size_t capacity_max = std::size_t{1} << 32;

  explicit basic_faa_array_t(std::size_t capacity);  // 1 <= capacity <= capacity_max
  ~basic_faa_array_t();
  basic_faa_array_t(const basic_faa_array_t&) = delete;
  basic_faa_array_t& operator=(const basic_faa_array_t&) = delete;

  [[nodiscard]] bool push(const Value& value);  // false = full (nothing stored)
  [[nodiscard]] bool pop(Value& out);           // false = empty (out untouched)
  // The pointer queue's pop: the value, or nullptr when empty.
  template <typename V = Value, typename = std::enable_if_t<std::is_pointer_v<V>>>
  [[nodiscard]] V pop() {
    V value = nullptr;
    return pop(value) ? value : nullptr;
  }
  std::size_t capacity() const { return capacity_; }

 private:
  // A pointer's slot is 16 bytes. A wider value's slot takes a line of its
  // own: neighbouring tickets are written at once by different threads (a
  // pusher and a popper of a busy queue), and a slot the size of a status
  // would otherwise share its line with the next one.
  static constexpr std::size_t slot_alignment =
      sizeof(Value) > sizeof(void*) ? util::cache_line_bytes : 16;
  struct alignas(slot_alignment) slot_t {
    util::atomic<std::uint64_t> sequence{0};
    util::var<Value> value{};
  };
  // A counter alone on its line: tail_ is written by pushers, head_ by
  // poppers (each reads the other's).
  struct alignas(util::cache_line_bytes) counter_t {
    util::atomic<std::uint64_t> value{0};
  };
  static_assert(alignof(counter_t) == util::cache_line_bytes &&
                    sizeof(counter_t) % util::cache_line_bytes == 0,
                "each counter needs its own cache line");

  std::uint64_t values_max() const;
  [[nodiscard]] bool take_push_ticket(std::uint64_t& ticket);
  [[nodiscard]] bool take_pop_ticket(std::uint64_t& ticket);
  static std::size_t round_up_pow2(std::size_t n);

  counter_t tail_;
  counter_t head_;
  alignas(util::cache_line_bytes) const std::size_t capacity_;
  const std::size_t slots_count_;
  const std::uint64_t slots_mask_;
  slot_t* const slots_;
};

using faa_array_t = basic_faa_array_t<void*>;

// At least 2: with one slot, "full for pop t" (t + 1) and "free for push
// t + 1" (t + slots_count) would be the same sequence number.
template <typename Value>
std::size_t basic_faa_array_t<Value>::round_up_pow2(std::size_t n) {
  std::size_t result = 2;
  while (result < n) result <<= 1;  // bounded: n <= capacity_max
  return result;
}

template <typename Value>
basic_faa_array_t<Value>::basic_faa_array_t(std::size_t capacity)
    : capacity_(capacity),
      slots_count_(round_up_pow2(capacity)),
      slots_mask_(slots_count_ - 1),
      slots_(new slot_t[slots_count_]) {
  LCI_ASSERT(capacity > 0, "faa_array_t capacity must be positive");
  // Unreachable mutants: bound. The mutant differs only for capacity == 2^32, which the
  // slot array above (16 bytes a slot: 64 GiB) has already had to allocate; nothing here
  // can (tools/mutate_records/2026-11-27-runs-05-28.md, run 10).
  LCI_ASSERT(capacity <= capacity_max, "faa_array_t capacity too large");
  for (std::size_t i = 0; i < slots_count_; ++i) {
    // relaxed: the queue is not shared yet.
    slots_[i].sequence.store(i, util::mo_relaxed);
  }
}

template <typename Value>
basic_faa_array_t<Value>::~basic_faa_array_t() {
  // relaxed: teardown, no concurrent operations (precondition).
  const std::uint64_t tail = tail_.value.load(util::mo_relaxed);
  const std::uint64_t head = head_.value.load(util::mo_relaxed);  // as above
  LCI_ASSERT(head <= tail, "faa_array_t more pops than pushes at teardown");
  LCI_ASSERT(tail - head <= values_max(),
             "faa_array_t holds more than capacity values at teardown");
  delete[] slots_;
}

// The most values the tickets let in: capacity. (Broken variant, tests/cq:
// off by one, admits capacity + 1 values.)
template <typename Value>
std::uint64_t basic_faa_array_t<Value>::values_max() const {
  return capacity_ + (util::mutated("faa_array_admits_one_extra") ? 1 : 0);
}

// seq_cst on every tail_/head_ access here and in take_pop_ticket(): the
// full/empty argument (class comment) compares the two counters at one point
// of S. On x86 and Arm a seq_cst load or CAS costs what an acquire one does.
template <typename Value>
bool basic_faa_array_t<Value>::take_push_ticket(std::uint64_t& ticket) {
  // Equivalent mutants: mo_weaken. Acquire would do: a stale, smaller tail fails the CAS [A]
  // and a full answer from it holds at [A2]; acquire orders the push that wrote this tail
  // before [A2], so head is not older than that push saw
  // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
  std::uint64_t tail = tail_.value.load(util::mo_seq_cst);  // [A1] see above
  // Lock-free: a round repeats only when tail_ moved, i.e. another push took
  // a ticket.
  for (;;) {
    // (Broken variant, tests/cq: relaxed, which may read an older head and
    // answer full after a pop that precedes this push in S.)
    const std::uint64_t head = head_.value.load(
        util::mutated("faa_array_relaxed_full_head") ? util::mo_relaxed : util::mo_seq_cst);  // [A2]
    if (head > tail) {
      // tail_ moved on between [A1] and [A2]: head_ never passes tail_.
      // Equivalent mutants: mo_weaken. Acquire would do, as for [A1]
      // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
      tail = tail_.value.load(util::mo_seq_cst);  // [A1] again, see above
      continue;
    }
    LCI_ASSERT(tail - head <= values_max(), "faa_array_t holds too many values");
    if (tail - head >= values_max()) return false;  // full at [A2]
    // [A] On failure the CAS reloads tail (as [A1]) and we read head_ again.
    // Equivalent mutants: cas_weak, cas_failure. A spurious failure, or a failure value read
    // with acquire, is only the next lap's [A1] guess, which this CAS validates
    // (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
    if (tail_.value.compare_exchange_strong(tail, tail + 1, util::mo_seq_cst,
                                            util::mo_seq_cst)) {
      ticket = tail;
      return true;
    }
  }
}

template <typename Value>
bool basic_faa_array_t<Value>::take_pop_ticket(std::uint64_t& ticket) {
  // seq_cst: see take_push_ticket().
  // Equivalent mutants: mo_weaken. Acquire would do: a stale, smaller head fails the CAS [B]
  // and an empty answer from it holds at [B2]; acquire orders the pop that wrote this head
  // before [B2], so head <= tail below holds (tools/mutate_records/2026-11-27-runs-05-28.md,
  // run 5).
  std::uint64_t head = head_.value.load(util::mo_seq_cst);  // [B1]
  // Lock-free: a round repeats only when head_ moved, i.e. another pop took
  // a ticket.
  for (;;) {
    // (Broken variant, tests/cq: relaxed, which may read an older tail and
    // answer empty after a push that precedes this pop in S.)
    const std::uint64_t tail = tail_.value.load(
        util::mutated("faa_array_relaxed_empty_tail") ? util::mo_relaxed : util::mo_seq_cst);  // [B2]
    // head_ only grows and never passes tail_, so this holds despite the two
    // loads being apart.
    LCI_ASSERT(head <= tail, "faa_array_t pop ticket ahead of push tickets");
    // (Broken variant, tests/cq: off by one, refuses to pop the last value.)
    const std::uint64_t values_min =
        util::mutated("faa_array_pop_refuses_last") ? 1 : 0;
    if (tail - head <= values_min) return false;  // empty at [B2]
    // [B] On failure the CAS reloads head (as [B1]) and we read tail_ again.
    // Equivalent mutants: cas_weak, cas_failure. As for [A]: the failure value is only the
    // next lap's [B1] guess (tools/mutate_records/2026-11-27-runs-05-28.md, run 5).
    if (head_.value.compare_exchange_strong(head, head + 1, util::mo_seq_cst,
                                            util::mo_seq_cst)) {
      ticket = head;
      return true;
    }
  }
}

template <typename Value>
bool basic_faa_array_t<Value>::push(const Value& value) {
  if constexpr (std::is_pointer_v<Value>) {
    LCI_ASSERT(value != nullptr, "faa_array_t::push of a null value");
  }
  std::uint64_t ticket = 0;
  if (!take_push_ticket(ticket)) return false;
  slot_t& slot = slots_[ticket & slots_mask_];
  // Waits (busy, then yielding: backoff_t) only for pop (ticket -
  // slots_count), which holds its ticket (see Blocking): our CAS saw fewer
  // than capacity <= slots_count values, so head_ was past it.
  // acquire [W]: pairs with that pop's release [F], so its read of the old
  // value happens-before our overwrite.
  util::backoff_t backoff;
  while (slot.sequence.load(util::mo_acquire) != ticket) backoff.pause();
  if constexpr (std::is_pointer_v<Value>) {
    LCI_ASSERT(slot.value.load() == nullptr, "push into a full slot");
  }
  slot.value.store(value);
  // release [S]: pairs with the acquire [R] in pop(). (Broken variant,
  // tests/cq: relaxed, so the value is not published.)
  slot.sequence.store(ticket + 1, util::mutated("faa_array_relaxed_publish")
                                      ? util::mo_relaxed
                                      : util::mo_release);
  return true;
}

template <typename Value>
bool basic_faa_array_t<Value>::pop(Value& out) {
  std::uint64_t ticket = 0;
  // (Broken variant, tests/cq: a pop takes a ticket even when nothing was
  // pushed.)
  if (util::mutated("faa_array_no_pop_admission")) {
    // Equivalent mutants: mo_weaken, mo_to_relaxed. Dead code outside this broken variant,
    // whose targets tools/mutate does not run (tools/mutate_records/2026-11-27-runs-05-28.md,
    // run 5).
    ticket = head_.value.fetch_add(1, util::mo_seq_cst);  // seq_cst: as [B]
  } else if (!take_pop_ticket(ticket)) {
    return false;
  }
  slot_t& slot = slots_[ticket & slots_mask_];
  // Waits (busy, then yielding: backoff_t) only for push `ticket`, which
  // holds its ticket (our CAS saw tail_ past it), to publish (see Blocking).
  // acquire [R]: pairs with the release [S] in push().
  util::backoff_t backoff;
  while (slot.sequence.load(util::mo_acquire) != ticket + 1) backoff.pause();
  out = slot.value.load();
  if constexpr (std::is_pointer_v<Value>) {
    LCI_ASSERT(out != nullptr, "pop found an empty slot");
    slot.value.store(nullptr);  // so push can check it fills an empty slot
  }
  // release [F]: pairs with the acquire [W] in push().
  slot.sequence.store(ticket + slots_count_, util::mo_release);
  return true;
}

}  // namespace lci::cq
