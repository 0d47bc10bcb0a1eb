// Deliberately broken variants of the lock-free structures, for proving that
// the model checker and the property tests catch bugs (a check that cannot
// fail proves nothing).
//
// A test built with -DLCI_MUTATION=<name> by tests/model_check/relacy.bzl or
// tests/property/rapidcheck.bzl turns on exactly one named defect, e.g. a
// release store weakened to relaxed:
//
//   locked_.store(0, util::mutated("spinlock_relaxed_unlock") ? util::mo_relaxed
//                                                              : util::mo_release);
//
// mutated() is constexpr and false in every other build, so production code
// compiles to the correct variant only. Those macros also define
// LCI_TEST_MUTANT; a mutation without it is refused, so no library target
// can be built broken by accident.
#pragma once

#if defined(LCI_MUTATION) && !defined(LCI_TEST_MUTANT)
#error "LCI_MUTATION is only for the test macros' broken-variant builds"
#endif

namespace lci::util {

namespace detail {
constexpr bool names_equal(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    ++a;
    ++b;
  }
  return *a == *b;
}
}  // namespace detail

#if defined(LCI_MUTATION)
#define LCI_MUTATION_STRINGIFY_(x) #x
#define LCI_MUTATION_STRINGIFY(x) LCI_MUTATION_STRINGIFY_(x)
inline constexpr const char* active_mutation = LCI_MUTATION_STRINGIFY(LCI_MUTATION);
#else
inline constexpr const char* active_mutation = "";
#endif

// True only in the model-checking build whose LCI_MUTATION is `name`.
constexpr bool mutated(const char* name) {
  return detail::names_equal(active_mutation, name);
}

}  // namespace lci::util
