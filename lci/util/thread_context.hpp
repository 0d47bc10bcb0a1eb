// Per-thread facts the lock-free structures need: a small dense thread index
// (which per-thread deque is "mine") and a cheap per-thread random number
// (which victim to steal from).
//
// Thread safety: both functions may run concurrently from any threads.
// Blocking: thread_index() never, once the thread has its index; its first
//           call (and a thread's exit) takes a mutex for a few instructions.
// Allocation: none, except at a thread's first call, which may grow the list
//           of free indices.
// Limits: at most one live thread holds an index: a thread's first call
// takes the smallest index an exited thread gave back (the mutex orders that
// thread's uses of it before the new holder's, so per-index state needs no
// lock of its own), or else the next unused one. Indices therefore stay
// below the peak number of threads alive at once (plus threads still
// exiting). Structures that keep per-thread state for the first N indices
// map the others to index % N, which stays correct (those slots are locked)
// but shares a slot between two threads.
//
// Under LCI_MODEL_CHECK the index is Relacy's thread index and random numbers
// come from Relacy's scheduler, so the checker explores every choice.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(LCI_MODEL_CHECK)
#include "lci/util/detail/relacy.hpp"
#endif

namespace lci::util {

#if defined(LCI_MODEL_CHECK)

// A namespace of their own: a model-checking binary also links
// thread_context.cpp (production definitions of the same names), and the two
// must not be merged by the linker.
inline namespace model_check {
inline std::size_t thread_index() { return rl::thread_index(); }
inline std::uint32_t thread_random(std::uint32_t limit) {
  return rl::rand(limit);
}
}  // namespace model_check

#else

namespace detail {
// The calling thread's index + 1; 0 until its first thread_index(). A
// constant initializer and initial-exec (as spinlock.hpp's count; LCI is
// never dlopen'ed) make a read one load at a fixed offset from the thread
// pointer: the previous dynamically initialized thread_local went through
// its TLS wrapper and __tls_get_addr, 22 instructions a call, and the
// packet pool and the LCRQ's hazard slots call this on every operation.
inline thread_local std::size_t thread_index_plus_one
    __attribute__((tls_model("initial-exec"))) = 0;
std::size_t assign_thread_index();  // out of line: the first call only
}  // namespace detail

inline std::size_t thread_index() {
  const std::size_t plus_one = detail::thread_index_plus_one;
  if (__builtin_expect(plus_one != 0, 1)) return plus_one - 1;
  return detail::assign_thread_index();
}

// Uniform enough in [0, limit) for victim selection; limit > 0.
std::uint32_t thread_random(std::uint32_t limit);

#endif

}  // namespace lci::util
