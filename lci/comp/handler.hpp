// handler_impl_t: the handler completion object (paper §3.2): every signal
// calls a user function with the status.
//
// Thread safety: signal() may run concurrently from any threads; the
//                handler must then be safe to run concurrently with itself.
// Blocking:      runs user code on the signalling thread (inside progress or
//                a post); the handler must not call progress (comp_handler_t).
// Ownership:     the status is passed to the handler by value; a buffer it
//                names passes to the handler.
// Allocation:    none.
#pragma once

#include <stdexcept>

#include "lci/api/lci_types.hpp"
#include "lci/comp/comp_impl.hpp"

namespace lci::detail {

class handler_impl_t final : public comp_impl_t {
 public:
  // throws std::invalid_argument when handler is null
  explicit handler_impl_t(comp_handler_t handler)
      : comp_impl_t(comp_kind_t::handler), handler_(checked(handler)) {}

  void signal(status_t status) override { handler_(status); }
  comp_handler_t handler() const { return handler_; }

 private:
  static comp_handler_t checked(comp_handler_t handler) {
    if (handler == nullptr) {
      throw std::invalid_argument("alloc_handler: handler must not be null");
    }
    return handler;
  }

  const comp_handler_t handler_;
};

}  // namespace lci::detail
