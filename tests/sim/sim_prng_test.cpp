#include "sim/sim_prng.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

namespace {

using lci::sim::prng_t;

std::vector<std::uint64_t> draw(prng_t& prng, int count) {
  std::vector<std::uint64_t> values;
  for (int i = 0; i < count; ++i) values.push_back(prng.next_u64());
  return values;
}

TEST(Prng, SameSeedSameStream) {
  prng_t a(42);
  prng_t b(42);
  EXPECT_EQ(draw(a, 1000), draw(b, 1000));
  EXPECT_EQ(a.seed(), 42u);
}

TEST(Prng, DifferentSeedsDifferentStreams) {
  std::set<std::vector<std::uint64_t>> streams;
  for (std::uint64_t seed = 0; seed < 64; ++seed) {
    prng_t prng(seed);
    streams.insert(draw(prng, 4));
  }
  EXPECT_EQ(streams.size(), 64u);  // seed 0 included: splitmix64 mixes it
}

// A fork depends only on (seed, stream id), not on what was drawn before,
// and distinct ids (and the parent) give distinct streams.
TEST(Prng, ForkIsIndependentOfDrawsAndOfOtherStreams) {
  prng_t fresh(7);
  prng_t used(7);
  (void)draw(used, 100);
  prng_t fork_fresh = fresh.fork(3);
  prng_t fork_used = used.fork(3);
  EXPECT_EQ(draw(fork_fresh, 100), draw(fork_used, 100));

  std::set<std::vector<std::uint64_t>> streams;
  prng_t parent(7);
  streams.insert(draw(parent, 4));
  for (std::uint64_t id = 0; id < 32; ++id) {
    prng_t child = prng_t(7).fork(id);
    streams.insert(draw(child, 4));
  }
  EXPECT_EQ(streams.size(), 33u);
}

TEST(Prng, UniformStaysInRange) {
  prng_t prng(1);
  for (std::uint64_t bound : {1ull, 2ull, 3ull, 7ull, 1000ull, ~0ull}) {
    for (int i = 0; i < 1000; ++i) ASSERT_LT(prng.uniform(bound), bound);
  }
  EXPECT_EQ(prng.uniform(1), 0u);
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t value = prng.range(10, 12);
    ASSERT_GE(value, 10u);
    ASSERT_LE(value, 12u);
  }
}

// Each of k buckets gets n/k +- 6 standard deviations of a binomial count.
TEST(Prng, UniformIsRoughlyUniform) {
  constexpr int buckets_count = 10;
  constexpr int draws_count = 100000;
  prng_t prng(2);
  std::vector<int> counts(buckets_count, 0);
  for (int i = 0; i < draws_count; ++i) ++counts[prng.uniform(buckets_count)];
  const double expected = double{draws_count} / buckets_count;
  const double sigma = std::sqrt(expected * (1.0 - 1.0 / buckets_count));
  for (int count : counts) EXPECT_NEAR(count, expected, 6 * sigma);
}

TEST(Prng, ChanceHonoursItsEndsAndItsRate) {
  prng_t prng(3);
  for (int i = 0; i < 10000; ++i) {
    ASSERT_FALSE(prng.chance(0.0));
    ASSERT_TRUE(prng.chance(1.0));
  }
  constexpr int draws_count = 100000;
  constexpr double probability = 0.25;
  int hits = 0;
  for (int i = 0; i < draws_count; ++i) hits += prng.chance(probability) ? 1 : 0;
  const double expected = draws_count * probability;
  const double sigma = std::sqrt(expected * (1.0 - probability));
  EXPECT_NEAR(hits, expected, 6 * sigma);
}

}  // namespace
