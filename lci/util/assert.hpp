// Assertions for the runtime (TigerStyle): dense, one condition each.
//
// LCI_ASSERT        cheap; stays on in every build, release included.
// LCI_DEBUG_ASSERT  expensive (walks a structure, counts a list); on only when
//                   LCI_DEBUG is defined, as it is under --config=tsan/asan/fuzz
//                   and in the simulator's CI runs.
//
// A failed assertion prints the condition, file, line and a message, then
// aborts: an internal invariant is broken and continuing would corrupt state.
// Bad user input is not an assertion failure; it is reported with an exception
// by the public API layer.
#pragma once

namespace lci::util {

[[noreturn]] void assert_fail(const char* condition, const char* file, int line,
                              const char* message) noexcept;

}  // namespace lci::util

#define LCI_ASSERT(condition, message)                                      \
  do {                                                                      \
    if (__builtin_expect(!(condition), 0)) {                                \
      ::lci::util::assert_fail(#condition, __FILE__, __LINE__, (message));  \
    }                                                                       \
  } while (0)

#if defined(LCI_DEBUG) && LCI_DEBUG
#define LCI_DEBUG_ASSERT(condition, message) LCI_ASSERT(condition, message)
#else
// Still type-checks the condition so it cannot rot, but never evaluates it.
#define LCI_DEBUG_ASSERT(condition, message) \
  do {                                       \
    if (false) {                             \
      (void)(condition);                     \
      (void)(message);                       \
    }                                        \
  } while (0)
#endif
