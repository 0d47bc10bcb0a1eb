// Unit tests of cq_impl_t, both kinds: FIFO order, status copies, the empty
// answer, the array kind's overflow list (no status lost, order kept) and
// argument checks.
#include "lci/comp/cq.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <random>
#include <stdexcept>
#include <string>

namespace {

using lci::errorcode_t;
using lci::status_t;
using lci::detail::comp_kind_t;
using lci::detail::cq_impl_t;
using lci::detail::cq_kind_t;

status_t make_status(lci::tag_t tag) {
  status_t status(errorcode_t::done);
  status.tag = tag;
  status.rank = static_cast<int>(tag % 7);
  status.size = tag * 3;
  status.buffer = reinterpret_cast<void*>(0x1000 + tag);
  status.user_context = reinterpret_cast<void*>(0x2000 + tag);
  return status;
}

class CqTest : public ::testing::TestWithParam<cq_kind_t> {};

INSTANTIATE_TEST_SUITE_P(BothKinds, CqTest,
                         ::testing::Values(cq_kind_t::array_atomic,
                                           cq_kind_t::lcrq),
                         [](const auto& info) {
                           return info.param == cq_kind_t::lcrq
                                      ? std::string("lcrq")
                                      : std::string("array_atomic");
                         });

TEST_P(CqTest, EmptyPopIsRetry) {
  cq_impl_t cq(GetParam(), 16);
  EXPECT_EQ(cq.kind(), comp_kind_t::cq);
  EXPECT_EQ(cq.cq_kind(), GetParam());
  const status_t status = cq.pop();
  EXPECT_TRUE(status.is_retry());
  EXPECT_EQ(status.error.errorcode, errorcode_t::retry);
}

TEST_P(CqTest, CopiesEveryField) {
  cq_impl_t cq(GetParam(), 16);
  status_t sent = make_status(11);
  sent.error = errorcode_t::done_backlog;
  cq.signal(sent);
  const status_t got = cq.pop();
  EXPECT_EQ(got.error.errorcode, errorcode_t::done_backlog);
  EXPECT_EQ(got.rank, sent.rank);
  EXPECT_EQ(got.tag, sent.tag);
  EXPECT_EQ(got.size, sent.size);
  EXPECT_EQ(got.buffer, sent.buffer);
  EXPECT_EQ(got.user_context, sent.user_context);
  EXPECT_TRUE(cq.pop().is_retry());
}

TEST_P(CqTest, PopsInSignalOrder) {
  cq_impl_t cq(GetParam(), 1024);
  for (lci::tag_t tag = 0; tag < 500; ++tag) cq.signal(make_status(tag));
  for (lci::tag_t tag = 0; tag < 500; ++tag) {
    const status_t status = cq.pop();
    ASSERT_TRUE(status.is_done()) << "status " << tag << " missing";
    EXPECT_EQ(status.tag, tag);
  }
  EXPECT_TRUE(cq.pop().is_retry());
  EXPECT_EQ(cq.spilled_count(), 0u);
}

// Interleaved signals and pops against a sequential FIFO; with length 4 the
// array kind keeps spilling into its overflow list and draining it.
TEST_P(CqTest, MatchesAFifoUnderInterleaving) {
  cq_impl_t cq(GetParam(), 4);
  std::deque<lci::tag_t> model;
  std::mt19937 random(12345);
  lci::tag_t next_tag = 0;
  for (int step = 0; step < 20000; ++step) {
    if (random() % 100 < 55) {
      cq.signal(make_status(next_tag));
      model.push_back(next_tag++);
      continue;
    }
    const status_t status = cq.pop();
    if (model.empty()) {
      ASSERT_TRUE(status.is_retry()) << "step " << step;
      continue;
    }
    ASSERT_TRUE(status.is_done()) << "step " << step;
    ASSERT_EQ(status.tag, model.front()) << "step " << step;
    model.pop_front();
  }
  while (!model.empty()) {
    ASSERT_EQ(cq.pop().tag, model.front());
    model.pop_front();
  }
  EXPECT_TRUE(cq.pop().is_retry());
  if (GetParam() == cq_kind_t::array_atomic) {
    EXPECT_GT(cq.spilled_count(), 0u) << "the overflow path never ran";
  } else {
    EXPECT_EQ(cq.spilled_count(), 0u);
  }
}

// Statuses left in the queue are freed by the destructor (ASan checks leaks).
TEST_P(CqTest, DestructorDiscardsWhatIsLeft) {
  cq_impl_t cq(GetParam(), 2);
  for (lci::tag_t tag = 0; tag < 10; ++tag) cq.signal(make_status(tag));
  EXPECT_EQ(cq.pop().tag, 0u);
}

TEST(CqArrayTest, OverflowKeepsEveryStatusInOrder) {
  constexpr int length = 8;
  cq_impl_t cq(cq_kind_t::array_atomic, length);
  for (lci::tag_t tag = 0; tag < 3 * length; ++tag) cq.signal(make_status(tag));
  EXPECT_EQ(cq.spilled_count(), 2u * length);
  // Free a slot: the next signal still queues behind the spilled ones.
  EXPECT_EQ(cq.pop().tag, 0u);
  cq.signal(make_status(3 * length));
  EXPECT_EQ(cq.spilled_count(), 2u * length + 1);
  for (lci::tag_t tag = 1; tag <= 3 * length; ++tag) {
    ASSERT_EQ(cq.pop().tag, tag);
  }
  EXPECT_TRUE(cq.pop().is_retry());
  // Drained: the array is used again.
  cq.signal(make_status(100));
  EXPECT_EQ(cq.spilled_count(), 2u * length + 1);
  EXPECT_EQ(cq.pop().tag, 100u);
}

TEST(CqArrayTest, RejectsLengthOutOfRange) {
  for (int length : {0, -5, cq_impl_t::default_length_max + 1}) {
    try {
      cq_impl_t cq(cq_kind_t::array_atomic, length);
      FAIL() << "default_length " << length << " was accepted";
    } catch (const std::invalid_argument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("default_length"), std::string::npos) << message;
      EXPECT_NE(message.find(std::to_string(length)), std::string::npos)
          << message;
    }
  }
}

TEST(CqLcrqTest, IgnoresLength) {
  cq_impl_t cq(cq_kind_t::lcrq, 0);
  for (lci::tag_t tag = 0; tag < 5000; ++tag) cq.signal(make_status(tag));
  for (lci::tag_t tag = 0; tag < 5000; ++tag) ASSERT_EQ(cq.pop().tag, tag);
  EXPECT_TRUE(cq.pop().is_retry());
}

}  // namespace
