// waiter_impl_t: the completion object of one operation that its poster
// waits for (a post with allow_posted = false: COMP_NULL, COMP_NULL_RETRY;
// lci/ops/post_ops.cpp). Not a user's object: it lives on the
// poster's stack for one post. It is built on every such post, and most of
// those complete at once and never signal it, so it is a flag and a status
// where a synchronizer (sync.hpp) has a claim counter, a slot array and an
// out-of-line constructor and destructor (with the copy of the post's
// arguments post_ops.cpp no longer makes: 114 instructions a message saved,
// 3885 -> 3771 in //bench:sim_msgrate under callgrind,
// docs/bench_sim_msgrate.md).
//
// Thread safety: signal() at most once, from any thread; test() by the
//                poster, concurrently with it.
// Blocking:      never. Allocation: none.
#pragma once

#include "lci/api/lci_types.hpp"
#include "lci/comp/comp_impl.hpp"
#include "lci/util/assert.hpp"
#include "lci/util/atomic.hpp"

namespace lci::detail {

class waiter_impl_t final : public comp_impl_t {
 public:
  waiter_impl_t() : comp_impl_t(comp_kind_t::waiter) {}

  void signal(status_t status) override {
    LCI_ASSERT(!done_.load(util::mo_relaxed), "a waited-for operation signalled twice");
    status_.store(status);
    // release: publishes status_ to test()'s acquire.
    done_.store(true, util::mo_release);
  }
  // true once signalled: *p_out gets the operation's status.
  [[nodiscard]] bool test(status_t* p_out) {
    // acquire: pairs with signal()'s release, so status_ is complete.
    if (!done_.load(util::mo_acquire)) return false;
    *p_out = status_.load();
    return true;
  }

 private:
  util::atomic<bool> done_{false};
  util::var<status_t> status_;
};

}  // namespace lci::detail
