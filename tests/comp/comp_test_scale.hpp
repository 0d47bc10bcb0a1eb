// Iteration counts for the completion-object stress tests: ThreadSanitizer
// slows atomics and thread switches by an order of magnitude, so the counts
// shrink there to keep each test well inside its time limit.
#pragma once

namespace lci::comp::test {

#if defined(__SANITIZE_THREAD__)
#define LCI_COMP_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LCI_COMP_TEST_TSAN 1
#endif
#endif

#if defined(LCI_COMP_TEST_TSAN)
inline constexpr int stress_scale_divisor = 4;
#else
inline constexpr int stress_scale_divisor = 1;
#endif

inline constexpr int scaled(int iterations) {
  return iterations / stress_scale_divisor;
}

}  // namespace lci::comp::test
