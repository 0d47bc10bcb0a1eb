// counter_impl_t: the counter completion object: every signal adds one
// (completion counting for puts and other one-sided operations, where only
// how many completed matters). The status itself is discarded.
//
// Thread safety: every member function may run concurrently from any
//                threads. set() races with concurrent signals (a signal may
//                land before or after it); callers set() while quiescent.
// Blocking:      never (one atomic operation each).
// Ownership:     a status passed to signal() is dropped; it must not name a
//                buffer the user has to free (an incoming AM buffer).
// Allocation:    none.
// Progress:      wait-free.
#pragma once

#include <cstdint>

#include "lci/api/lci_types.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

class counter_impl_t final : public comp_impl_t {
 public:
  counter_impl_t() : comp_impl_t(comp_kind_t::counter), count_(0) {}

  void signal(status_t /*status*/) override {
    // release: pairs with the acquire in get(): a reader that counts this
    // completion also sees what the completed operation wrote (an RMA
    // target buffer). The increments form a release sequence, so one
    // acquire load synchronizes with every signal it counts.
    count_.fetch_add(1, util::mo_release);
  }
  // acquire: pairs with signal() (see there).
  std::int64_t get() const { return count_.load(util::mo_acquire); }
  // release: a get() that reads this value (or a later increment of it)
  // also sees what this thread wrote before set().
  void set(std::int64_t value) { count_.store(value, util::mo_release); }

 private:
  util::atomic<std::int64_t> count_;
};

}  // namespace lci::detail
