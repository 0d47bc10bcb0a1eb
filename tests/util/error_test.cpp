#include "lci/util/error.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using lci::errorcode_t;
using lci::error_t;

// Each code belongs to exactly one family; fatal belongs to none.
TEST(Error, FamiliesPartitionTheCodes) {
  struct expectation {
    errorcode_t code;
    bool done, posted, retry;
    const char* name;
  };
  const expectation table[] = {
      {errorcode_t::done, true, false, false, "done"},
      {errorcode_t::done_backlog, true, false, false, "done_backlog"},
      {errorcode_t::posted, false, true, false, "posted"},
      {errorcode_t::posted_backlog, false, true, false, "posted_backlog"},
      {errorcode_t::retry, false, false, true, "retry"},
      {errorcode_t::retry_init, false, false, true, "retry_init"},
      {errorcode_t::retry_lock, false, false, true, "retry_lock"},
      {errorcode_t::retry_nopacket, false, false, true, "retry_nopacket"},
      {errorcode_t::retry_nomem, false, false, true, "retry_nomem"},
      {errorcode_t::retry_backlog, false, false, true, "retry_backlog"},
      {errorcode_t::fatal, false, false, false, "fatal"},
  };
  for (const auto& row : table) {
    const error_t error(row.code);
    EXPECT_EQ(error.is_done(), row.done) << row.name;
    EXPECT_EQ(error.is_posted(), row.posted) << row.name;
    EXPECT_EQ(error.is_retry(), row.retry) << row.name;
    EXPECT_EQ(std::string(error.get_str()), row.name);
  }
}

TEST(Error, DefaultIsRetry) {
  const error_t error;
  EXPECT_TRUE(error.is_retry());
  EXPECT_EQ(error, error_t(errorcode_t::retry));
  EXPECT_NE(error, error_t(errorcode_t::done));
}

}  // namespace
