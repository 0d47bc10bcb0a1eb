// Unit tests of sync_impl_t: thresholds 1 and > 1, status copies, reuse
// across rounds, argument checks and misuse detection.
#include "lci/comp/sync.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace {

using lci::errorcode_t;
using lci::status_t;
using lci::detail::comp_kind_t;
using lci::detail::sync_impl_t;

status_t make_status(int rank, lci::tag_t tag) {
  status_t status(errorcode_t::done);
  status.rank = rank;
  status.tag = tag;
  status.size = 8 * tag;
  status.buffer = reinterpret_cast<void*>(0x1000 + tag);
  status.user_context = reinterpret_cast<void*>(0x2000 + tag);
  return status;
}

void expect_same(const status_t& got, const status_t& expected) {
  EXPECT_EQ(got.error, expected.error);
  EXPECT_EQ(got.rank, expected.rank);
  EXPECT_EQ(got.tag, expected.tag);
  EXPECT_EQ(got.size, expected.size);
  EXPECT_EQ(got.buffer, expected.buffer);
  EXPECT_EQ(got.user_context, expected.user_context);
}

TEST(SyncTest, RejectsThresholdOutOfRange) {
  for (int threshold : {0, -1, sync_impl_t::threshold_max + 1}) {
    try {
      sync_impl_t sync(threshold);
      FAIL() << "threshold " << threshold << " was accepted";
    } catch (const std::invalid_argument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("threshold"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(threshold)), std::string::npos)
          << message;
    }
  }
}

TEST(SyncTest, ReportsItsKindAndThreshold) {
  sync_impl_t sync(5);
  EXPECT_EQ(sync.kind(), comp_kind_t::sync);
  EXPECT_EQ(sync.threshold(), 5);
}

TEST(SyncTest, ThresholdOneCompletesOnTheSignalAndCopiesItsStatus) {
  sync_impl_t sync(1);
  status_t out = make_status(-7, 999);
  EXPECT_FALSE(sync.test(&out));
  EXPECT_EQ(out.tag, 999u) << "a false test() must not write p_out";
  const status_t sent = make_status(3, 42);
  sync.signal(sent);
  ASSERT_TRUE(sync.test(&out));
  expect_same(out, sent);
  EXPECT_FALSE(sync.test(&out)) << "test() re-arms the synchronizer";
}

TEST(SyncTest, ThresholdOneIsReusableAcrossRounds) {
  sync_impl_t sync(1);
  for (int round = 0; round < 100; ++round) {
    EXPECT_FALSE(sync.test(nullptr));
    const status_t sent = make_status(round, static_cast<lci::tag_t>(round));
    sync.signal(sent);
    status_t out;
    ASSERT_TRUE(sync.test(&out)) << "round " << round;
    expect_same(out, sent);
  }
}

TEST(SyncTest, NullOutputStillCompletesAndResets) {
  sync_impl_t sync(2);
  sync.signal(make_status(0, 1));
  sync.signal(make_status(0, 2));
  EXPECT_TRUE(sync.test(nullptr));
  EXPECT_FALSE(sync.test(nullptr));
  sync.signal(make_status(0, 3));
  EXPECT_FALSE(sync.test(nullptr));
  sync.signal(make_status(0, 4));
  status_t out[2];
  ASSERT_TRUE(sync.test(out));
  EXPECT_EQ(out[0].tag, 3u);
  EXPECT_EQ(out[1].tag, 4u);
}

TEST(SyncTest, ThresholdManyWaitsForEverySignalThenCopiesThemInOrder) {
  constexpr int threshold = 4;
  sync_impl_t sync(threshold);
  std::vector<status_t> sent;
  status_t out[threshold];
  for (int i = 0; i < threshold; ++i) {
    out[0].tag = 999;
    EXPECT_FALSE(sync.test(out)) << "after " << i << " signals";
    EXPECT_EQ(out[0].tag, 999u) << "a false test() must not write p_out";
    sent.push_back(make_status(i, 100 + static_cast<lci::tag_t>(i)));
    sync.signal(sent.back());
  }
  ASSERT_TRUE(sync.test(out));
  for (int i = 0; i < threshold; ++i) expect_same(out[i], sent[i]);
  EXPECT_FALSE(sync.test(out));
}

TEST(SyncTest, ThresholdManyIsReusableAcrossRounds) {
  constexpr int threshold = 3;
  sync_impl_t sync(threshold);
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < threshold; ++i) {
      EXPECT_FALSE(sync.test(nullptr));
      sync.signal(make_status(round, static_cast<lci::tag_t>(round * 10 + i)));
    }
    status_t out[threshold];
    ASSERT_TRUE(sync.test(out)) << "round " << round;
    for (int i = 0; i < threshold; ++i) {
      EXPECT_EQ(out[i].tag, static_cast<lci::tag_t>(round * 10 + i));
      EXPECT_EQ(out[i].rank, round);
    }
  }
}

TEST(SyncTest, ErrorCodesPassThroughUnchanged) {
  sync_impl_t sync(2);
  status_t first(errorcode_t::done_backlog);
  status_t second(errorcode_t::retry_nomem);
  sync.signal(first);
  sync.signal(second);
  status_t out[2];
  ASSERT_TRUE(sync.test(out));
  EXPECT_EQ(out[0].error.errorcode, errorcode_t::done_backlog);
  EXPECT_EQ(out[1].error.errorcode, errorcode_t::retry_nomem);
}

using SyncDeathTest = ::testing::Test;

TEST(SyncDeathTest, ThresholdOneSignalledTwiceAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        sync_impl_t sync(1);
        sync.signal(make_status(0, 1));
        sync.signal(make_status(0, 2));
      },
      "signalled twice");
}

TEST(SyncDeathTest, MoreThanThresholdSignalsAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        sync_impl_t sync(2);
        for (int i = 0; i < 3; ++i) sync.signal(make_status(0, 1));
      },
      "more than threshold");
}

}  // namespace
