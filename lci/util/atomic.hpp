// The one door to atomics for every lock-free structure in lci/.
//
// Normally a thin wrapper over std::atomic. With LCI_MODEL_CHECK defined, the
// same names map onto the Relacy Race Detector (relacy-dev), so the production
// source of a structure is exactly what the model checker explores. Structures
// therefore never name std::atomic directly, and every access passes its
// memory order explicitly (there is no defaulted seq_cst).
//
//   atomic<T>         an atomic word
//   var<T>            plain shared data whose races the model checker must see
//                     (in production, just a T)
//   atomic_u64_pair   a 16-byte word updated by double-width CAS (LCRQ cells)
//   spin_pause()      the body of every spin loop (PAUSE; a yield under Relacy)
//
// Under Relacy each operation records its call site through __builtin_FILE /
// __builtin_LINE default arguments, so a report points at the structure's
// code rather than at this header.
#pragma once

#include <cstdint>

#if defined(LCI_MODEL_CHECK)
#include "lci/util/detail/relacy.hpp"
#else
#include <atomic>
#endif

namespace lci::util {

#if defined(LCI_MODEL_CHECK)

using memory_order = rl::memory_order;
inline constexpr memory_order mo_relaxed = rl::mo_relaxed;
inline constexpr memory_order mo_acquire = rl::mo_acquire;
inline constexpr memory_order mo_release = rl::mo_release;
inline constexpr memory_order mo_acq_rel = rl::mo_acq_rel;
inline constexpr memory_order mo_seq_cst = rl::mo_seq_cst;

#define LCI_RL_SITE                                                    \
  ::rl::debug_info_param site = ::rl::debug_info(                      \
      __builtin_FUNCTION(), __builtin_FILE(), __builtin_LINE())

template <typename T>
class atomic {
 public:
  atomic() : value_(T{}) {}
  explicit atomic(T initial) : value_(initial) {}
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;

  T load(memory_order mo, LCI_RL_SITE) const { return value_.load(mo, site); }
  void store(T desired, memory_order mo, LCI_RL_SITE) {
    value_.store(desired, mo, site);
  }
  T exchange(T desired, memory_order mo, LCI_RL_SITE) {
    return value_.exchange(desired, mo, site);
  }
  bool compare_exchange_strong(T& expected, T desired, memory_order success,
                               memory_order failure, LCI_RL_SITE) {
    return value_.compare_exchange_strong(expected, desired, success, site,
                                          failure, site);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order success,
                             memory_order failure, LCI_RL_SITE) {
    return value_.compare_exchange_weak(expected, desired, success, site,
                                        failure, site);
  }
  T fetch_add(T delta, memory_order mo, LCI_RL_SITE) {
    return value_.fetch_add(delta, mo, site);
  }
  T fetch_sub(T delta, memory_order mo, LCI_RL_SITE) {
    return value_.fetch_sub(delta, mo, site);
  }
  T fetch_or(T bits, memory_order mo, LCI_RL_SITE) {
    return value_.fetch_or(bits, mo, site);
  }

 private:
  rl::atomic<T> value_;
};

template <typename T>
class var {
 public:
  var() : value_(T{}) {}
  explicit var(T initial) : value_(initial) {}
  var(const var&) = delete;
  var& operator=(const var&) = delete;

  T load(LCI_RL_SITE) const { return value_(site).load(); }
  void store(T value, LCI_RL_SITE) { value_(site).store(value); }

 private:
  rl::var<T> value_;
};

inline void spin_pause(LCI_RL_SITE) { rl::yield(1, site); }

#else  // production

#if defined(LCI_SPURIOUS_CAS)
// --config=spurious_cas: a weak compare-exchange fails spuriously about
// every other call, as the C++ memory model allows and x86 never does, so a
// CAS that must not fail spuriously (tools/mutate's cas_weak mutants) shows
// in ordinary tests. Which calls fail follows a per-thread pseudo-random
// sequence, not a fixed alternation, so that a retry loop over two weak CASes
// cannot fail in lockstep forever. Never in a production build.
inline bool spurious_cas_due() {
  thread_local std::uint32_t state = 0x9e3779b9u;
  state ^= state << 13;  // xorshift32
  state ^= state >> 17;
  state ^= state << 5;
  return (state & 1u) != 0;
}
#endif

using memory_order = std::memory_order;
inline constexpr memory_order mo_relaxed = std::memory_order_relaxed;
inline constexpr memory_order mo_acquire = std::memory_order_acquire;
inline constexpr memory_order mo_release = std::memory_order_release;
inline constexpr memory_order mo_acq_rel = std::memory_order_acq_rel;
inline constexpr memory_order mo_seq_cst = std::memory_order_seq_cst;

template <typename T>
class atomic {
 public:
  atomic() : value_(T{}) {}
  explicit atomic(T initial) : value_(initial) {}
  atomic(const atomic&) = delete;
  atomic& operator=(const atomic&) = delete;

  T load(memory_order mo) const { return value_.load(mo); }
  void store(T desired, memory_order mo) { value_.store(desired, mo); }
  T exchange(T desired, memory_order mo) { return value_.exchange(desired, mo); }
  bool compare_exchange_strong(T& expected, T desired, memory_order success,
                               memory_order failure) {
    return value_.compare_exchange_strong(expected, desired, success, failure);
  }
  bool compare_exchange_weak(T& expected, T desired, memory_order success,
                             memory_order failure) {
#if defined(LCI_SPURIOUS_CAS)
    if (spurious_cas_due()) {
      // What a spurious failure does: no store, and `expected` gets the
      // value read (with the failure order), which may equal it.
      expected = value_.load(failure);
      return false;
    }
#endif
    return value_.compare_exchange_weak(expected, desired, success, failure);
  }
  T fetch_add(T delta, memory_order mo) { return value_.fetch_add(delta, mo); }
  T fetch_sub(T delta, memory_order mo) { return value_.fetch_sub(delta, mo); }
  T fetch_or(T bits, memory_order mo) { return value_.fetch_or(bits, mo); }

 private:
  std::atomic<T> value_;
  static_assert(std::atomic<T>::is_always_lock_free,
                "lock-free structures need lock-free atomics");
};

template <typename T>
class var {
 public:
  var() : value_(T{}) {}
  explicit var(T initial) : value_(initial) {}
  var(const var&) = delete;
  var& operator=(const var&) = delete;

  T load() const { return value_; }
  void store(T value) { value_ = value; }

 private:
  T value_;
};

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

#endif  // LCI_MODEL_CHECK

// Two 64-bit halves updated together by a double-width compare-and-swap.
struct u64_pair {
  std::uint64_t lo;
  std::uint64_t hi;
  bool operator==(const u64_pair& other) const {
    return lo == other.lo && hi == other.hi;
  }
};

// A 16-byte cell: each half can be read on its own (an 8-byte atomic load);
// both are replaced at once by compare_exchange (cmpxchg16b, a full barrier).
// Reading lo and then hi may observe halves written by two different
// compare_exchanges; callers treat such a snapshot only as the `expected`
// argument of a later compare_exchange, which then fails and they retry.
//
// std::atomic<16-byte T> is not lock-free with gcc 12 / clang-16 (it calls
// libatomic), whereas __sync_bool_compare_and_swap on unsigned __int128 emits
// an inline `lock cmpxchg16b` under -mcx16; hence the builtins.
//
// Under LCI_MODEL_CHECK Relacy has no 16-byte atomic, so the cell is modelled
// as two Relacy atomics and a model-only guard word: compare_exchange holds
// the guard while it compares and writes both halves, and each half-load takes
// the guard too. A reader can thus see halves from two different
// compare_exchanges (as in production) but never a half-finished one (which
// cmpxchg16b makes impossible).
class atomic_u64_pair {
 public:
#if defined(LCI_MODEL_CHECK)
  atomic_u64_pair() : guard_(0), lo_(0), hi_(0) {}
  void init(u64_pair value, LCI_RL_SITE) {
    lo_.store(value.lo, mo_relaxed, site);
    hi_.store(value.hi, mo_relaxed, site);
  }
  std::uint64_t load_lo(LCI_RL_SITE) const { return locked_load(lo_, site); }
  std::uint64_t load_hi(LCI_RL_SITE) const { return locked_load(hi_, site); }
  bool compare_exchange(const u64_pair& expected, const u64_pair& desired,
                        LCI_RL_SITE) {
    lock(site);
    const bool equal = lo_.load(mo_relaxed, site) == expected.lo &&
                       hi_.load(mo_relaxed, site) == expected.hi;
    if (equal) {
      lo_.store(desired.lo, mo_relaxed, site);
      hi_.store(desired.hi, mo_relaxed, site);
    }
    unlock(site);
    return equal;
  }

 private:
  void lock(rl::debug_info_param site) const {
    int expected = 0;
    // seq_cst: cmpxchg16b is a full barrier; the guard reproduces that.
    // strong: Relacy explores a spurious failure of every weak CAS, which
    // for this model-only guard adds nothing but a branch per cell access
    // (it made the LCRQ model check ~100x slower).
    while (!guard_.compare_exchange_strong(expected, 1, mo_seq_cst, mo_relaxed,
                                         site)) {
      expected = 0;
      spin_pause(site);
    }
  }
  void unlock(rl::debug_info_param site) const {
    guard_.store(0, mo_seq_cst, site);  // seq_cst: see lock()
  }
  std::uint64_t locked_load(const atomic<std::uint64_t>& half,
                            rl::debug_info_param site) const {
    lock(site);
    const std::uint64_t value = half.load(mo_relaxed, site);
    unlock(site);
    return value;
  }

  mutable atomic<int> guard_;
  atomic<std::uint64_t> lo_;
  atomic<std::uint64_t> hi_;
#else
  atomic_u64_pair() : words_{0, 0} {}
  // Not concurrent with any other access: used while the cell is private.
  void init(u64_pair value) {
    __atomic_store_n(&words_[0], value.lo, __ATOMIC_RELAXED);
    __atomic_store_n(&words_[1], value.hi, __ATOMIC_RELAXED);
  }
  // acquire: pairs with the full barrier of the compare_exchange that wrote
  // the half, so the data it published is visible.
  std::uint64_t load_lo() const {
    return __atomic_load_n(&words_[0], __ATOMIC_ACQUIRE);
  }
  std::uint64_t load_hi() const {
    return __atomic_load_n(&words_[1], __ATOMIC_ACQUIRE);
  }
  bool compare_exchange(const u64_pair& expected, const u64_pair& desired) {
    return __sync_bool_compare_and_swap(as_u128(), pack(expected), pack(desired));
  }

 private:
  static unsigned __int128 pack(const u64_pair& value) {
    return (static_cast<unsigned __int128>(value.hi) << 64) | value.lo;
  }
  unsigned __int128* as_u128() {
    return reinterpret_cast<unsigned __int128*>(words_);
  }

  alignas(16) std::uint64_t words_[2];  // [0] = lo, [1] = hi (little endian)
#endif
};

}  // namespace lci::util
