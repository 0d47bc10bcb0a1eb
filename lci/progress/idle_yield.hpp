// idle_yield_t: when one thread's progress() calls keep finding nothing to
// do, the thread lets the others on its core run (host_t::yield_when_idle).
//
// Why: LCI's waits are user loops over progress(), which never blocks. Where
// a machine has fewer cores than spinning threads (two processes of two
// threads each on two cores; a task runtime with more workers than cores),
// a thread waiting for its peer's reply spins until the scheduler preempts
// it, and the peer thread that would send the reply runs only then: over
// libfabric shm, 8-byte rates with 2 threads per process on 2 cores fell to
// one window per time slice (22,000 messages/s against 3 million with one
// thread per process; docs/bench_upstream.md, "Yielding when idle"). MPI
// libraries do the same (MPICH's polls before yield, Open MPI's
// yield_when_idle).
//
// The cost where the cores are not oversubscribed: one sched_yield, which
// returns at once, per `polls_before_yield` empty calls (each at least one
// CQ read), and none while messages keep arriving.
//
// Thread safety: none; one per OS thread (progress.cpp keeps it thread_local).
// Blocking:      never; the caller yields when note() says so.
// Allocation:    none.
#pragma once

#include <cstdint>

#include "lci/api/lci_generated.hpp"

namespace lci::detail {

// The default of LCI_PROGRESS_POLLS_BEFORE_YIELD (lci/api/lci_api.def): long
// enough that a wait of a round trip (a few empty calls) never yields,
// short enough that a waiting thread gives its core away well before a
// time slice ends (64 empty calls take a few microseconds over shm).
static_assert(env_progress_polls_before_yield_default <= UINT32_MAX,
              "the default count fits polls_before_yield()'s type");
inline constexpr auto polls_before_yield_default =
    static_cast<std::uint32_t>(env_progress_polls_before_yield_default);

// A plain aggregate, so that a thread_local one needs no initialiser call
// on every access.
struct idle_yield_t {
  // Empty progress calls in a row since the last yield or progress.
  std::uint32_t empty_polls = 0;

  // Records one progress call (`progressed`: it did anything); true when
  // the caller should yield now: the call was the polls_before_yield-th
  // empty one in a row (polls_before_yield = 0: never). The count starts
  // again after a yield and after any call that progressed.
  [[nodiscard]] bool note(bool progressed, std::uint32_t polls_before_yield) {
    if (progressed || polls_before_yield == 0) {
      empty_polls = 0;
      return false;
    }
    if (++empty_polls < polls_before_yield) return false;
    empty_polls = 0;
    return true;
  }
};

// LCI_PROGRESS_POLLS_BEFORE_YIELD (a count; 0: never yield), read once per
// process; polls_before_yield_default when unset. Throws
// std::invalid_argument for a value that is not a count.
std::uint32_t polls_before_yield();

}  // namespace lci::detail
