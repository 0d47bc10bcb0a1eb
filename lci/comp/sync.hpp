// sync_impl_t: the synchronizer completion object (paper §3.2, §4.1.4):
// ready once `threshold` signals arrived; test() then hands out their
// statuses and re-arms it for the next round (like an MPI request that
// accepts several completions).
//
// Thread safety: signal() may run concurrently from any threads. test() is
//                called by one thread at a time (the waiter); it may run
//                concurrently with signal(). A round's signals must happen
//                after the test() that ended the previous round returned true
//                (they belong to operations posted after it); more than
//                threshold signals in one round is misuse and aborts.
// Blocking:      never (signal: one CAS or two fetch_adds; test: loads,
//                copies, two resets).
// Ownership:     statuses are copied in and copied out; a buffer a status
//                names passes to whoever test() gives the status to.
// Allocation:    the slot array (threshold statuses), once, at construction;
//                none for threshold 1, whose one slot is a member (a post
//                with allow_posted = false waits on such a synchronizer on
//                the stack: lci/ops/post_ops.cpp).
// Limits:        1 <= threshold <= threshold_max (std::invalid_argument
//                otherwise). The (threshold + 1)-th signal of a round
//                (before the test() that resets) fails an LCI_ASSERT.
// Progress:      wait-free (no loop waits for another thread).
//
// Two layouts, as in the paper:
//   threshold == 1: an atomic flag (empty -> writing -> full) and one slot.
//     signal claims the flag (CAS empty -> writing), writes the slot and
//     publishes with a release store of full [F1]; test() is ready when an
//     acquire load sees full [T1], copies the slot and stores empty [R1].
//   threshold > 1: the slot array with two counters. claimed_ (fetch_add
//     [C]) gives each signaller its own slot; filled_ (fetch_add [F] after
//     the slot write) counts recorded statuses; test() is ready when an
//     acquire load of filled_ reads threshold [T], then copies the slots and
//     resets filled_ then claimed_ [R].
// Linearization: a signal at [F1]/[F]; a test() that returns true at [T1]/[T]
//                (false: the same load seeing fewer).
// Details and the model check: docs/design/comp.md.
#pragma once

#include <cstdint>

#include "lci/api/lci_types.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/util/atomic.hpp"
#include "lci/util/cache.hpp"

#if defined(LCI_MODEL_CHECK)
#include <ostream>

namespace lci {
// Relacy prints the value of every util::var access in the execution
// history of a failed check; the slots hold statuses.
inline std::ostream& operator<<(std::ostream& os, const status_t& status) {
  return os << "status{" << status.error.get_str() << ", rank " << status.rank
            << ", tag " << status.tag << "}";
}
}  // namespace lci
#endif

namespace lci::detail {

class sync_impl_t final : public comp_impl_t {
 public:
  // Bounds the slot array (40 bytes a status): 1 Mi statuses, 40 MiB.
  static constexpr int threshold_max = 1 << 20;

  explicit sync_impl_t(int threshold);  // throws std::invalid_argument
  ~sync_impl_t() override;

  void signal(status_t status) override;
  // true once threshold signals are recorded: copies them (in the order
  // their slots were claimed) into p_out[0, threshold) unless p_out is
  // nullptr, and re-arms the synchronizer. false: nothing is copied.
  [[nodiscard]] bool test(status_t* p_out);
  int threshold() const { return threshold_; }

 private:
  enum flag_state_t : std::uint8_t { flag_empty, flag_writing, flag_full };

  void signal_flag(const status_t& status);
  void signal_slots(const status_t& status);
  bool test_flag(status_t* p_out);
  bool test_slots(status_t* p_out);

  // Signallers write claimed_ (and flag_); signallers and the waiter write
  // filled_ while the waiter polls it: each on its own line, so a polling
  // waiter does not slow down the claims.
  struct alignas(util::cache_line_bytes) counter_t {
    util::atomic<int> value{0};
  };
  static_assert(alignof(counter_t) == util::cache_line_bytes &&
                    sizeof(counter_t) % util::cache_line_bytes == 0,
                "each counter needs its own cache line");

  counter_t claimed_;  // threshold > 1: slots handed out this round
  counter_t filled_;   // threshold > 1: slots written this round
  // threshold == 1: a flag_state_t. Shares its line with the read-only
  // fields below, which the same threads read on every call.
  alignas(util::cache_line_bytes) util::atomic<std::uint8_t> flag_;
  const int threshold_;
  util::var<status_t> one_slot_;      // the slot when threshold == 1
  util::var<status_t>* const slots_;  // threshold entries
};

}  // namespace lci::detail
