// lci/util/atomic.hpp under LCI_SPURIOUS_CAS (defined for this test's
// translation unit; --config=spurious_cas defines it for every one): a weak
// compare-exchange fails spuriously about every other call and then behaves
// as the C++ model says a spurious failure does; a strong one never fails
// spuriously; and retry loops still finish, also a loop over two weak CASes.
#include <gtest/gtest.h>

#include "lci/util/atomic.hpp"

namespace {

using lci::util::atomic;
using lci::util::mo_acquire;
using lci::util::mo_relaxed;

TEST(SpuriousCas, AWeakCasFailsAboutHalfTheTimeWithoutStoring) {
  atomic<int> word(5);
  int failures = 0;
  for (int i = 0; i < 1000; ++i) {
    int expected = 5;
    if (word.compare_exchange_weak(expected, 6, mo_acquire, mo_relaxed)) {
      word.store(5, mo_relaxed);
      continue;
    }
    ++failures;
    EXPECT_EQ(expected, 5) << "a spurious failure hands back the value read";
    EXPECT_EQ(word.load(mo_relaxed), 5) << "and stores nothing";
  }
  EXPECT_GT(failures, 350);
  EXPECT_LT(failures, 650);
}

TEST(SpuriousCas, AStrongCasNeverFailsSpuriously) {
  atomic<int> word(0);
  for (int i = 0; i < 1000; ++i) {
    int expected = i;
    ASSERT_TRUE(word.compare_exchange_strong(expected, i + 1, mo_acquire, mo_relaxed));
  }
}

// Each round needs a success of `first` and then of `second`; a failure of
// either starts the round again. A fixed alternation of failures would
// fail `second` in every round.
TEST(SpuriousCas, ARetryLoopOverTwoWeakCasesFinishes) {
  atomic<int> first(0);
  atomic<int> second(0);
  constexpr int rounds = 1000;
  int attempts = 0;
  for (int round = 0; round < rounds; ++round) {
    for (;;) {
      ASSERT_LT(++attempts, 100 * rounds) << "the retry loop does not finish";
      int expected = round;
      if (!first.compare_exchange_weak(expected, round + 1, mo_acquire, mo_relaxed)) continue;
      expected = round;
      if (second.compare_exchange_weak(expected, round + 1, mo_acquire, mo_relaxed)) break;
      first.store(round, mo_relaxed);  // undo, and start the round again
    }
  }
  EXPECT_EQ(first.load(mo_relaxed), rounds);
  EXPECT_EQ(second.load(mo_relaxed), rounds);
}

}  // namespace
