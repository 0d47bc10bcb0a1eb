// backoff_t's contract (lci/util/backoff.hpp): exactly spins_before_yield_max
// pauses spin, and every pause after them gives the core away. The test
// binary defines sched_yield, which the executable's symbol takes over from
// the C library's, so the yields are counted rather than timed.
#include <gtest/gtest.h>
#include <sched.h>

#include <cstdint>

#include "lci/util/backoff.hpp"

namespace {
// Only the test's thread pauses: a plain counter.
std::uint64_t yields_count = 0;
}  // namespace

extern "C" int sched_yield() noexcept {
  ++yields_count;
  return 0;
}

namespace {

using lci::util::backoff_t;

TEST(Backoff, SpinsExactlySpinsBeforeYieldMaxThenYieldsEveryRound) {
  backoff_t backoff;
  const std::uint64_t before = yields_count;
  for (std::uint32_t i = 0; i < backoff_t::spins_before_yield_max; ++i) backoff.pause();
  EXPECT_EQ(yields_count, before) << "a yield before spins_before_yield_max spins";
  backoff.pause();
  EXPECT_EQ(yields_count, before + 1) << "no yield after spins_before_yield_max spins";
  backoff.pause();
  EXPECT_EQ(yields_count, before + 2) << "every round after the spins yields";
}

TEST(Backoff, EachWaiterCountsItsOwnSpins) {
  backoff_t first;
  for (std::uint32_t i = 0; i <= backoff_t::spins_before_yield_max; ++i) first.pause();
  const std::uint64_t before = yields_count;
  backoff_t second;
  second.pause();
  EXPECT_EQ(yields_count, before) << "a fresh backoff_t starts with spins";
}

}  // namespace
