// Inline bodies of fiber_t::resume()/suspend() and the sanitizer hooks
// around the stack switch. Included only by the scheduler's and the fiber's
// .cpp files: inlining the switch into the scheduler loop and into yield()
// leaves no function frame that straddles a jump, so no `ret` returns into a
// frame of the other stack (each such return is a mispredicted branch: they
// cost more than the switch itself).
#pragma once

#include <boost/context/detail/fcontext.hpp>
#include <cxxabi.h>

#include "lci/util/assert.hpp"
#include "sim/sim_fiber.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LCI_SIM_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define LCI_SIM_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(LCI_SIM_ASAN)
#define LCI_SIM_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(LCI_SIM_TSAN)
#define LCI_SIM_TSAN 1
#endif

#if defined(LCI_SIM_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(LCI_SIM_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace lci::sim {
namespace detail {

namespace fcontext = boost::context::detail;
using fcontext_transfer_t = boost::context::detail::transfer_t;

// The per-thread exception state of the Itanium C++ ABI (section 2.2.2):
// the stack of exceptions being handled and the count of thrown, uncaught
// ones. Fibers share one OS thread, so each fiber keeps its own copy and the
// resumer swaps it in and out; otherwise a fiber that yields inside a catch
// block or during unwinding would see (or rethrow) another fiber's exception,
// and std::uncaught_exceptions() would count other fibers' throws.
struct eh_globals_t {
  void* caught_exceptions;
  unsigned int uncaught_exceptions;
};

inline eh_globals_t* this_thread_eh_globals() {
  // The pointer is fixed for the thread's lifetime: look it up once.
  thread_local eh_globals_t* const globals =
      reinterpret_cast<eh_globals_t*>(abi::__cxa_get_globals());
  return globals;
}

}  // namespace detail

inline void fiber_t::resume() {
  LCI_ASSERT(state_ == state_t::created || state_ == state_t::suspended,
             "resume of a running or finished fiber");
  LCI_ASSERT(context_ != nullptr, "resume of a fiber without a context");
  state_ = state_t::running;
  detail::eh_globals_t* const eh = detail::this_thread_eh_globals();
  const detail::eh_globals_t resumer_eh = *eh;
  *eh = detail::eh_globals_t{eh_caught_, eh_uncaught_};
#if defined(LCI_SIM_TSAN)
  tsan_resumer_ = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(tsan_fiber_, 0);  // 0: synchronize (one OS thread)
#endif
#if defined(LCI_SIM_ASAN)
  void* resumer_fake_stack = nullptr;
  __sanitizer_start_switch_fiber(&resumer_fake_stack,
                                 static_cast<char*>(mapping_) + (mapping_bytes_ - stack_bytes_),
                                 stack_bytes_);
#endif
  const detail::fcontext_transfer_t back = detail::fcontext::jump_fcontext(context_, this);
#if defined(LCI_SIM_ASAN)
  __sanitizer_finish_switch_fiber(resumer_fake_stack, nullptr, nullptr);
#endif
  eh_caught_ = eh->caught_exceptions;
  eh_uncaught_ = eh->uncaught_exceptions;
  *eh = resumer_eh;
  if (state_ == state_t::finished) {
    context_ = nullptr;  // the stack holds nothing live any more
    LCI_ASSERT(outcome_ != outcome_t::none, "finished fiber without an outcome");
    return;
  }
  LCI_ASSERT(state_ == state_t::suspended, "fiber came back without suspending");
  context_ = back.fctx;
}

inline void fiber_t::suspend() {
  LCI_ASSERT(state_ == state_t::running, "suspend outside the running fiber");
  LCI_ASSERT(resumer_ != nullptr, "suspend without a resumer");
  state_ = state_t::suspended;
#if defined(LCI_SIM_ASAN)
  __sanitizer_start_switch_fiber(&asan_fake_stack_, resumer_stack_bottom_,
                                 resumer_stack_bytes_);
#endif
#if defined(LCI_SIM_TSAN)
  __tsan_switch_to_fiber(tsan_resumer_, 0);
#endif
  const detail::fcontext_transfer_t back = detail::fcontext::jump_fcontext(resumer_, nullptr);
#if defined(LCI_SIM_ASAN)
  __sanitizer_finish_switch_fiber(asan_fake_stack_, &resumer_stack_bottom_,
                                  &resumer_stack_bytes_);
#endif
  LCI_ASSERT(back.data == this, "fiber resumed through another fiber's record");
  resumer_ = back.fctx;
}

}  // namespace lci::sim
