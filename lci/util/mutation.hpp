// Deliberately broken variants of the lock-free structures, for proving that
// the model checker catches bugs (a check that cannot fail proves nothing).
//
// A model-checking test built with -DLCI_MUTATION=<name> (see
// tests/model_check/relacy.bzl) turns on exactly one named defect, e.g. a
// release store weakened to relaxed:
//
//   locked_.store(0, util::mutated("spinlock_relaxed_unlock") ? util::mo_relaxed
//                                                              : util::mo_release);
//
// mutated() is constexpr and false in every other build, so production code
// compiles to the correct variant only. Mutations exist only under
// LCI_MODEL_CHECK.
#pragma once

#if defined(LCI_MUTATION) && !defined(LCI_MODEL_CHECK)
#error "LCI_MUTATION is only for model-checking builds (LCI_MODEL_CHECK)"
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
