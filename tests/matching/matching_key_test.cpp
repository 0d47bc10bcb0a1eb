#include "lci/matching/matching_key.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using lci::matching_entry_key_t;
using lci::matching_policy_t;
using lci::tag_t;
using lci::matching::key_maker_t;
using lci::matching::make_key;
namespace m = lci::matching;

// Boundary values around each field's limits (derived from the header's
// constants, never typed in twice).
std::vector<int> rank_tag_ranks() {
  const int max = static_cast<int>(m::key_rank_tag_rank_max);
  return {0, 1, 2, max / 2, max / 2 + 1, max - 1, max};
}
std::vector<tag_t> rank_tag_tags() {
  const tag_t max = m::key_rank_tag_tag_max;
  return {0, 1, 2, max / 2, max / 2 + 1, max - 1, max};
}
std::vector<int> rank_only_ranks() {
  const int max = static_cast<int>(m::key_rank_only_rank_max);
  return {0, 1, 2, 1 << 30, (1 << 30) - 1, max - 1, max};
}
std::vector<tag_t> tag_only_tags() {
  const tag_t max = m::key_tag_only_tag_max;
  return {0, 1, 2, tag_t{1} << 32, (tag_t{1} << 32) - 1, max / 2, max - 1, max};
}

// The exception's message, or "" when `fn` did not throw invalid_argument.
template <typename Fn>
std::string invalid_argument_message(Fn fn) {
  try {
    fn();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(MakeKey, RankTagIsLosslessOnBoundaries) {
  std::set<matching_entry_key_t> keys;
  for (int rank : rank_tag_ranks()) {
    for (tag_t tag : rank_tag_tags()) {
      keys.insert(make_key(rank, tag, matching_policy_t::rank_tag));
    }
  }
  EXPECT_EQ(keys.size(), rank_tag_ranks().size() * rank_tag_tags().size());
  // The fields do not bleed into each other: rank r+1 tag 0 is not rank r
  // with the largest tag plus one.
  EXPECT_NE(make_key(1, 0, matching_policy_t::rank_tag),
            make_key(0, m::key_rank_tag_tag_max, matching_policy_t::rank_tag));
}

TEST(MakeKey, RankOnlyIsLosslessAndIgnoresTag) {
  std::set<matching_entry_key_t> keys;
  for (int rank : rank_only_ranks()) {
    const matching_entry_key_t key =
        make_key(rank, 0, matching_policy_t::rank_only);
    keys.insert(key);
    EXPECT_EQ(key, make_key(rank, ~tag_t{0}, matching_policy_t::rank_only));
  }
  EXPECT_EQ(keys.size(), rank_only_ranks().size());
}

TEST(MakeKey, TagOnlyIsLosslessAndIgnoresRank) {
  std::set<matching_entry_key_t> keys;
  for (tag_t tag : tag_only_tags()) {
    const matching_entry_key_t key =
        make_key(0, tag, matching_policy_t::tag_only);
    keys.insert(key);
    EXPECT_EQ(key, make_key(-1, tag, matching_policy_t::tag_only));
    EXPECT_EQ(key, make_key(INT_MAX, tag, matching_policy_t::tag_only));
  }
  EXPECT_EQ(keys.size(), tag_only_tags().size());
}

TEST(MakeKey, NoneIsOneKeyForEverything) {
  const matching_entry_key_t key = make_key(0, 0, matching_policy_t::none);
  EXPECT_EQ(make_key(-5, ~tag_t{0}, matching_policy_t::none), key);
  EXPECT_EQ(make_key(INT_MAX, 12345, matching_policy_t::none), key);
}

TEST(MakeKey, PoliciesNeverCollide) {
  std::set<matching_entry_key_t> all;
  std::size_t expected = 0;
  for (int rank : rank_tag_ranks()) {
    for (tag_t tag : rank_tag_tags()) {
      all.insert(make_key(rank, tag, matching_policy_t::rank_tag));
      ++expected;
    }
  }
  for (int rank : rank_only_ranks()) {
    all.insert(make_key(rank, 0, matching_policy_t::rank_only));
    ++expected;
  }
  for (tag_t tag : tag_only_tags()) {
    all.insert(make_key(0, tag, matching_policy_t::tag_only));
    ++expected;
  }
  all.insert(make_key(0, 0, matching_policy_t::none));
  ++expected;
  EXPECT_EQ(all.size(), expected);
  // The policy sits in the top two bits.
  for (matching_policy_t policy :
       {matching_policy_t::none, matching_policy_t::rank_only,
        matching_policy_t::tag_only, matching_policy_t::rank_tag}) {
    EXPECT_EQ(make_key(0, 0, policy) >> m::key_policy_shift,
              static_cast<std::uint64_t>(policy));
  }
}

TEST(MakeKey, OutOfRangeThrowsNamingArgumentValueAndLimit) {
  const std::string rank_tag_rank_limit =
      std::to_string(m::key_rank_tag_rank_max);
  std::string message = invalid_argument_message(
      [] { (void)make_key(-1, 0, matching_policy_t::rank_tag); });
  EXPECT_NE(message.find("rank = -1"), std::string::npos) << message;
  EXPECT_NE(message.find(rank_tag_rank_limit), std::string::npos) << message;

  const int too_big_rank = static_cast<int>(m::key_rank_tag_rank_max + 1);
  message = invalid_argument_message(
      [&] { (void)make_key(too_big_rank, 0, matching_policy_t::rank_tag); });
  EXPECT_NE(message.find("rank = " + std::to_string(too_big_rank)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(rank_tag_rank_limit), std::string::npos) << message;

  const tag_t too_big_tag = m::key_rank_tag_tag_max + 1;
  message = invalid_argument_message(
      [&] { (void)make_key(0, too_big_tag, matching_policy_t::rank_tag); });
  EXPECT_NE(message.find("tag = " + std::to_string(too_big_tag)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(std::to_string(m::key_rank_tag_tag_max)),
            std::string::npos)
      << message;

  message = invalid_argument_message(
      [] { (void)make_key(-7, 0, matching_policy_t::rank_only); });
  EXPECT_NE(message.find("rank = -7"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(m::key_rank_only_rank_max)),
            std::string::npos)
      << message;

  const tag_t too_big_tag_only = m::key_tag_only_tag_max + 1;
  message = invalid_argument_message([&] {
    (void)make_key(0, too_big_tag_only, matching_policy_t::tag_only);
  });
  EXPECT_NE(message.find("tag = " + std::to_string(too_big_tag_only)),
            std::string::npos)
      << message;
  EXPECT_NE(message.find(std::to_string(m::key_tag_only_tag_max)),
            std::string::npos)
      << message;
}

TEST(MakeKey, UnknownPolicyThrows) {
  const std::string message = invalid_argument_message(
      [] { (void)make_key(0, 0, static_cast<matching_policy_t>(9)); });
  EXPECT_NE(message.find("policy = 9"), std::string::npos) << message;
}

matching_entry_key_t key_ignoring_tag(int rank, tag_t, matching_policy_t) {
  return static_cast<matching_entry_key_t>(rank) * 7 + 3;
}

TEST(KeyMaker, DefaultsToMakeKeyAndUsesUserFunction) {
  const key_maker_t builtin;
  EXPECT_FALSE(builtin.has_user_fn());
  EXPECT_EQ(builtin(3, 4, matching_policy_t::rank_tag),
            make_key(3, 4, matching_policy_t::rank_tag));
  EXPECT_THROW((void)builtin(-1, 0, matching_policy_t::rank_tag),
               std::invalid_argument);

  const key_maker_t user(&key_ignoring_tag);
  EXPECT_TRUE(user.has_user_fn());
  EXPECT_EQ(user(3, 4, matching_policy_t::rank_tag),
            key_ignoring_tag(3, 0, {}));
  EXPECT_EQ(user(3, 4, matching_policy_t::rank_tag),
            user(3, 99, matching_policy_t::tag_only));
  // The user function decides alone: no range check on its arguments.
  EXPECT_NO_THROW((void)user(-1, ~tag_t{0}, matching_policy_t::rank_tag));
}

}  // namespace
