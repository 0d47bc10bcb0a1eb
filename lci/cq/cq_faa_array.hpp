// faa_array_t: a fixed-capacity MPMC completion queue of non-null void*
// built on fetch-and-add tickets (paper §4.1.4, the "FAA-based fixed-size
// array", the second CQ implementation next to lcrq_t).
//
// Thread safety: push and pop may run concurrently from any threads; the
//                destructor must not run concurrently with anything.
// Blocking:      bounded spin: an admitted push (pop) whose slot is still
//                being emptied (filled) by the previous lap's pop (the
//                matching push) waits for that operation's few remaining
//                instructions. It never waits for a future operation, so it
//                cannot deadlock, but a descheduled peer delays it.
// Ownership:     the queue stores the pointer only; the pointee stays the
//                caller's. A value belongs to the queue from a push that
//                returned true until the pop that returns it.
// Allocation:    the slot array, once, at construction; never afterwards.
// Limits:        capacity values (1 <= capacity <= capacity_max). A push
//                when capacity values are admitted returns false and stores
//                nothing; a pop with nothing admitted returns nullptr.
// Progress:      admission is lock-free; a ticket holder is blocking as above
//                (not lock-free: see docs/design/cq.md).
//
// Algorithm. size_ counts admitted pushes minus admitted pops. A push is
// admitted by a CAS size_ -> size_ + 1 only while size_ < capacity [A]; a pop
// by a CAS size_ -> size_ - 1 only while size_ > 0 [A']. Only then does it
// take a ticket t = tail_++ (head_++ for a pop): an operation never takes a
// ticket it cannot use. Slot t % slots_count carries a sequence number: t
// means "free for push t", t + 1 "full for pop t", and pop t frees it for
// push t + slots_count. slots_count is capacity rounded up to a power of two
// (a mask instead of a division) and at least 2 (so that t + 1 and
// t + slots_count differ); admission still enforces capacity.
//
// Linearization: a full push / empty pop at its admission load or failed CAS
// that sees size_ == capacity / size_ == 0. A successful push at its ticket
// F&A [P] (tickets order the values); a successful pop at the later of its
// ticket F&A [Q] and the publication [S] of the matching push (so a pop that
// got its ticket before push t published is ordered after it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/backoff.hpp"
#include "lci/util/cache.hpp"
#include "lci/util/mutation.hpp"

namespace lci::cq {

class faa_array_t {
 public:
  static constexpr std::size_t capacity_max = std::size_t{1} << 32;

  explicit faa_array_t(std::size_t capacity);  // 1 <= capacity <= capacity_max
  ~faa_array_t();
  faa_array_t(const faa_array_t&) = delete;
  faa_array_t& operator=(const faa_array_t&) = delete;

  [[nodiscard]] bool push(void* value);  // false = full (nothing stored)
  [[nodiscard]] void* pop();             // nullptr = empty
  std::size_t capacity() const { return capacity_; }

 private:
  struct alignas(16) slot_t {
    util::atomic<std::uint64_t> sequence{0};
    util::var<void*> value{nullptr};
  };
  // A counter alone on its line: size_ is written by pushers and poppers,
  // tail_ by pushers, head_ by poppers.
  struct alignas(util::cache_line_bytes) counter_t {
    util::atomic<std::uint64_t> value{0};
  };
  static_assert(alignof(counter_t) == util::cache_line_bytes &&
                    sizeof(counter_t) % util::cache_line_bytes == 0,
                "each counter needs its own cache line");

  bool admit_push();
  bool admit_pop();
  static std::size_t round_up_pow2(std::size_t n);

  counter_t size_;
  counter_t tail_;
  counter_t head_;
  alignas(util::cache_line_bytes) const std::size_t capacity_;
  const std::size_t slots_count_;
  const std::uint64_t slots_mask_;
  slot_t* const slots_;
};

// At least 2: with one slot, "full for pop t" (t + 1) and "free for push
// t + 1" (t + slots_count) would be the same sequence number.
inline std::size_t faa_array_t::round_up_pow2(std::size_t n) {
  std::size_t result = 2;
  while (result < n) result <<= 1;  // bounded: n <= capacity_max
  return result;
}

inline faa_array_t::faa_array_t(std::size_t capacity)
    : capacity_(capacity),
      slots_count_(round_up_pow2(capacity)),
      slots_mask_(slots_count_ - 1),
      slots_(new slot_t[slots_count_]) {
  LCI_ASSERT(capacity > 0, "faa_array_t capacity must be positive");
  LCI_ASSERT(capacity <= capacity_max, "faa_array_t capacity too large");
  for (std::size_t i = 0; i < slots_count_; ++i) {
    // relaxed: the queue is not shared yet.
    slots_[i].sequence.store(i, util::mo_relaxed);
  }
}

inline faa_array_t::~faa_array_t() {
  // relaxed: teardown, no concurrent operations (precondition).
  LCI_ASSERT(size_.value.load(util::mo_relaxed) <= capacity_,
             "faa_array_t size out of range at teardown");
  LCI_ASSERT(tail_.value.load(util::mo_relaxed) -
                     head_.value.load(util::mo_relaxed) ==
                 size_.value.load(util::mo_relaxed),  // relaxed: teardown
             "faa_array_t tickets and size disagree at teardown");
  delete[] slots_;
}

inline bool faa_array_t::admit_push() {
  // relaxed: the counter orders nothing by itself; values are published by
  // the slot sequence (release [S] / acquire [W]). Only its modification
  // order matters, which every RMW respects.
  std::uint64_t size = size_.value.load(util::mo_relaxed);
  // Lock-free: the CAS fails only when another push or pop was admitted.
  for (;;) {
    // (Broken variant, tests/cq: off by one, admits capacity + 1 values.)
    const std::uint64_t admitted_max =
        capacity_ + (util::mutated("faa_array_admits_one_extra") ? 1 : 0);
    if (size >= admitted_max) return false;  // [A] full
    if (size_.value.compare_exchange_weak(size, size + 1,
                                          util::mo_relaxed,    // see above
                                          util::mo_relaxed)) {  // see above
      return true;
    }
  }
}

inline bool faa_array_t::admit_pop() {
  // relaxed: as in admit_push().
  std::uint64_t size = size_.value.load(util::mo_relaxed);
  // Lock-free: the CAS fails only when another push or pop was admitted.
  for (;;) {
    // (Broken variant, tests/cq: off by one, refuses to pop the last value.)
    const std::uint64_t admitted_min =
        util::mutated("faa_array_pop_refuses_last") ? 1 : 0;
    if (size <= admitted_min) return false;  // [A'] empty
    if (size_.value.compare_exchange_weak(size, size - 1,
                                          util::mo_relaxed,    // see push
                                          util::mo_relaxed)) {  // see push
      return true;
    }
  }
}

inline bool faa_array_t::push(void* value) {
  LCI_ASSERT(value != nullptr, "faa_array_t::push of a null value");
  if (!admit_push()) return false;
  // [P] relaxed: tickets only need to be unique; the slot sequence orders
  // the data.
  const std::uint64_t ticket = tail_.value.fetch_add(1, util::mo_relaxed);
  slot_t& slot = slots_[ticket & slots_mask_];
  // Waits (busy, then yielding: backoff_t) only for pop (ticket -
  // slots_count), which was admitted before us, to finish freeing the slot
  // (see Blocking).
  // acquire [W]: pairs with that pop's release [F], so its read of the old
  // value happens-before our overwrite.
  util::backoff_t backoff;
  while (slot.sequence.load(util::mo_acquire) != ticket) backoff.pause();
  LCI_ASSERT(slot.value.load() == nullptr, "push into a full slot");
  slot.value.store(value);
  // release [S]: pairs with the acquire [R] in pop(). (Broken variant,
  // tests/cq: relaxed, so the value is not published.)
  slot.sequence.store(ticket + 1, util::mutated("faa_array_relaxed_publish")
                                      ? util::mo_relaxed
                                      : util::mo_release);
  return true;
}

inline void* faa_array_t::pop() {
  // (Broken variant, tests/cq: no admission, a pop takes a ticket even when
  // nothing was pushed.)
  if (util::mutated("faa_array_no_pop_admission")) {
    // relaxed: as in admit_pop(); keeps size_ matching the tickets.
    size_.value.fetch_sub(1, util::mo_relaxed);
  } else if (!admit_pop()) {
    return nullptr;
  }
  // [Q] relaxed: tickets only need to be unique; the slot sequence orders
  // the data.
  const std::uint64_t ticket = head_.value.fetch_add(1, util::mo_relaxed);
  slot_t& slot = slots_[ticket & slots_mask_];
  // Waits (busy, then yielding: backoff_t) only for push `ticket`, which an
  // admitted push holds or will take, to publish (see Blocking).
  // acquire [R]: pairs with the release [S] in push().
  util::backoff_t backoff;
  while (slot.sequence.load(util::mo_acquire) != ticket + 1) backoff.pause();
  void* value = slot.value.load();
  LCI_ASSERT(value != nullptr, "pop found an empty slot");
  slot.value.store(nullptr);  // so push can check it fills an empty slot
  // release [F]: pairs with the acquire [W] in push().
  slot.sequence.store(ticket + slots_count_, util::mo_release);
  return value;
}

}  // namespace lci::cq
