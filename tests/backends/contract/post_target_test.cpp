// check_post_target (backends/backend.hpp): a post's rank, size and buffer,
// with the limits themselves accepted and each refusal naming its cause.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "backends/backend.hpp"

namespace {

using lci::backend::check_post_target;

constexpr int ranks_count = 2;
constexpr std::size_t size_max = 8;

// The text of the std::invalid_argument that check_post_target throws.
std::string refusal(int rank, const void* buffer, std::size_t size) {
  try {
    check_post_target("post_send", rank, ranks_count, buffer, size, size_max);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  ADD_FAILURE() << "no refusal for rank " << rank << ", size " << size;
  return "";
}

TEST(PostTarget, AcceptsTheLimitsThemselves) {
  const char buffer[size_max] = {};
  EXPECT_NO_THROW(check_post_target("post_send", 0, ranks_count, buffer, size_max, size_max));
  EXPECT_NO_THROW(
      check_post_target("post_send", ranks_count - 1, ranks_count, buffer, 1, size_max));
  EXPECT_NO_THROW(check_post_target("post_send", 0, ranks_count, nullptr, 0, size_max));
}

TEST(PostTarget, NamesTheCauseOfARefusal) {
  const char buffer[size_max + 1] = {};
  EXPECT_EQ(refusal(-1, buffer, 1), "post_send: rank -1 is not in [0, 2)");
  EXPECT_EQ(refusal(ranks_count, buffer, 1), "post_send: rank 2 is not in [0, 2)");
  EXPECT_EQ(refusal(0, buffer, size_max + 1), "post_send: size 9 exceeds the limit 8");
  // A size at the limit is not the cause: the null buffer is.
  EXPECT_EQ(refusal(0, nullptr, size_max), "post_send: buffer is null for size 8");
}

}  // namespace
