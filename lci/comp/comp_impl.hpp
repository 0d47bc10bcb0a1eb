// comp_impl_t: what every completion object (paper §3.2) is to the runtime:
// something a finished operation signals with its status_t.
//
// Thread safety: signal() may run concurrently from any threads (the
//                progress engine of any device, or a post that completed at
//                once with allow_done false).
// Blocking:      signal() never blocks, except that a handler runs user code.
// Ownership:     the status is passed by value; a buffer it names belongs to
//                whoever the operation's contract says (an incoming AM buffer:
//                the user, once they take the status out; with
//                zero_copy_am, a packet the user returns by put_upacket).
#pragma once

#include <cstdint>

#include "lci/api/lci_types.hpp"

namespace lci::detail {

// waiter: a post's own, never a user's (waiter.hpp).
enum class comp_kind_t : std::uint8_t { sync, cq, handler, counter, graph, waiter };

class comp_impl_t {
 public:
  explicit comp_impl_t(comp_kind_t kind) : kind_(kind) {}
  virtual ~comp_impl_t() = default;
  comp_impl_t(const comp_impl_t&) = delete;
  comp_impl_t& operator=(const comp_impl_t&) = delete;

  virtual void signal(status_t status) = 0;
  comp_kind_t kind() const { return kind_; }
  // The zero_copy_am attribute: an eager active message is delivered in
  // its packet (docs/design/runtime.md, "Zero-copy active messages"). Set
  // once by the allocation, before the object is shared.
  bool zero_copy_am() const { return zero_copy_am_; }
  void set_zero_copy_am(bool zero_copy_am) { zero_copy_am_ = zero_copy_am; }

 private:
  const comp_kind_t kind_;
  bool zero_copy_am_ = false;
};

}  // namespace lci::detail
