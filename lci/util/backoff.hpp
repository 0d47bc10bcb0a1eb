// backoff_t: how a thread waits for another thread to finish a short step
// (a spinlock holder, an FAA-array partner between taking its ticket and
// publishing). First a bounded busy-wait with PAUSE; after
// spins_before_yield_max rounds, give the core away on every round. On an
// oversubscribed machine (more runnable threads than cores) the thread being
// waited for may be descheduled, and a pure spin would burn the waiter's
// whole time slice before it could run again.
//
// Thread safety: one backoff_t per waiting thread (a local variable).
// Blocking: the caller's loop waits; pause() itself never blocks beyond an
// OS yield. Under LCI_MODEL_CHECK both steps are Relacy yields.
#pragma once

#include <cstdint>

#include "lci/util/atomic.hpp"

#if !defined(LCI_MODEL_CHECK)
#include <sched.h>
#endif

namespace lci::util {

class backoff_t {
 public:
  // ~64 PAUSEs is a few hundred ns: long enough for a running partner to
  // finish a step of a few instructions, short next to a time slice.
  static constexpr std::uint32_t spins_before_yield_max = 64;

  void pause() {
    if (spins_count_ < spins_before_yield_max) {
      ++spins_count_;
      spin_pause();
      return;
    }
#if defined(LCI_MODEL_CHECK)
    spin_pause();
#else
    sched_yield();
#endif
  }

 private:
  std::uint32_t spins_count_ = 0;
};

}  // namespace lci::util
