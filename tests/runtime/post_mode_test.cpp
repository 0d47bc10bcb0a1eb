// post_mode_of (lci/runtime/post_mode.hpp): every combination of the
// completion object given, the three allow_* options and receive-or-not,
// from a program and from the backlog, against rows written out from the
// documented rules (docs/guide/completion.md, "Will this call block, retry
// or queue?"), and what each mode answers the layers that read it.
#include "lci/runtime/post_mode.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <tuple>

namespace {

using lci::detail::comp_given_t;
using lci::detail::post_inputs_t;
using lci::detail::post_mode_of;
using lci::detail::post_mode_t;
using lci::detail::post_origin_t;
using G = comp_given_t;
using M = post_mode_t;

struct row_t {
  comp_given_t comp;
  bool allow_done;
  bool allow_posted;
  bool allow_retry;
  bool receive;
  std::optional<post_mode_t> mode;  // nullopt: the call throws
};
constexpr std::nullopt_t refused = std::nullopt;

// comp, allow_done, allow_posted, allow_retry, receive -> mode. The rules:
// COMP_NULL always waits (a refusal queued); COMP_NULL_RETRY is
// allow_posted(false); allow_posted(false) waits in the post, except a
// receive that may retry, which takes only what has arrived, and is
// refused with allow_done(false); allow_retry(false) queues a refusal;
// allow_done(false) signals an operation finished at once.
const row_t rows[] = {
    // clang-format off
    {G::object, 1, 1, 1, 0, M::done_posted_retry},
    {G::object, 1, 1, 1, 1, M::done_posted_retry},
    {G::object, 1, 1, 0, 0, M::done_posted_queued},
    {G::object, 1, 1, 0, 1, M::done_posted_queued},
    {G::object, 1, 0, 1, 0, M::done_retry_waited},
    {G::object, 1, 0, 1, 1, M::done_retry_now},
    {G::object, 1, 0, 0, 0, M::done_waited},
    {G::object, 1, 0, 0, 1, M::done_waited},
    {G::object, 0, 1, 1, 0, M::posted_retry},
    {G::object, 0, 1, 1, 1, M::posted_retry},
    {G::object, 0, 1, 0, 0, M::posted_queued},
    {G::object, 0, 1, 0, 1, M::posted_queued},
    {G::object, 0, 0, 1, 0, refused},
    {G::object, 0, 0, 1, 1, refused},
    {G::object, 0, 0, 0, 0, refused},
    {G::object, 0, 0, 0, 1, refused},
    {G::null, 1, 1, 1, 0, M::done_waited},
    {G::null, 1, 1, 1, 1, M::done_waited},
    {G::null, 1, 1, 0, 0, M::done_waited},
    {G::null, 1, 1, 0, 1, M::done_waited},
    {G::null, 1, 0, 1, 0, M::done_waited},
    {G::null, 1, 0, 1, 1, M::done_waited},
    {G::null, 1, 0, 0, 0, M::done_waited},
    {G::null, 1, 0, 0, 1, M::done_waited},
    {G::null, 0, 1, 1, 0, M::done_waited},
    {G::null, 0, 1, 1, 1, M::done_waited},
    {G::null, 0, 1, 0, 0, M::done_waited},
    {G::null, 0, 1, 0, 1, M::done_waited},
    {G::null, 0, 0, 1, 0, M::done_waited},
    {G::null, 0, 0, 1, 1, M::done_waited},
    {G::null, 0, 0, 0, 0, M::done_waited},
    {G::null, 0, 0, 0, 1, M::done_waited},
    {G::null_retry, 1, 1, 1, 0, M::done_retry_waited},
    {G::null_retry, 1, 1, 1, 1, M::done_retry_now},
    {G::null_retry, 1, 1, 0, 0, M::done_waited},
    {G::null_retry, 1, 1, 0, 1, M::done_waited},
    {G::null_retry, 1, 0, 1, 0, M::done_retry_waited},
    {G::null_retry, 1, 0, 1, 1, M::done_retry_now},
    {G::null_retry, 1, 0, 0, 0, M::done_waited},
    {G::null_retry, 1, 0, 0, 1, M::done_waited},
    {G::null_retry, 0, 1, 1, 0, refused},
    {G::null_retry, 0, 1, 1, 1, refused},
    {G::null_retry, 0, 1, 0, 0, refused},
    {G::null_retry, 0, 1, 0, 1, refused},
    {G::null_retry, 0, 0, 1, 0, refused},
    {G::null_retry, 0, 0, 1, 1, refused},
    {G::null_retry, 0, 0, 0, 0, refused},
    {G::null_retry, 0, 0, 0, 1, refused},
    // clang-format on
};

post_inputs_t program_inputs(const row_t& row) {
  post_inputs_t inputs;
  inputs.origin = post_origin_t::program;
  inputs.comp = row.comp;
  inputs.allow_done = row.allow_done;
  inputs.allow_posted = row.allow_posted;
  inputs.allow_retry = row.allow_retry;
  inputs.receive = row.receive;
  return inputs;
}

std::string describe(const row_t& row) {
  return "comp " + std::to_string(static_cast<int>(row.comp)) + ", allow_done " +
         std::to_string(row.allow_done) + ", allow_posted " + std::to_string(row.allow_posted) +
         ", allow_retry " + std::to_string(row.allow_retry) + ", receive " +
         std::to_string(row.receive);
}

TEST(PostMode, RowsCoverEveryCombinationOnce) {
  std::set<std::tuple<int, bool, bool, bool, bool>> seen;
  for (const row_t& row : rows) {
    const bool inserted = seen
                              .emplace(static_cast<int>(row.comp), row.allow_done,
                                       row.allow_posted, row.allow_retry, row.receive)
                              .second;
    EXPECT_TRUE(inserted) << "a second row for " << describe(row);
  }
  EXPECT_EQ(seen.size(), 3u * 2 * 2 * 2 * 2);
}

TEST(PostMode, ProgramPostsFollowTheRows) {
  for (const row_t& row : rows) {
    const std::optional<post_mode_t> mode = post_mode_of(program_inputs(row));
    ASSERT_EQ(mode.has_value(), row.mode.has_value()) << describe(row);
    if (mode.has_value()) {
      EXPECT_EQ(static_cast<int>(*mode), static_cast<int>(*row.mode)) << describe(row);
    }
  }
}

// A backlog replay signals its outcome and hands a refusal back to the
// backlog, whatever the post was given.
TEST(PostMode, BacklogReplaysSignalAndRetry) {
  for (const row_t& row : rows) {
    post_inputs_t inputs = program_inputs(row);
    inputs.origin = post_origin_t::backlog;
    const std::optional<post_mode_t> mode = post_mode_of(inputs);
    ASSERT_TRUE(mode.has_value()) << describe(row);
    EXPECT_EQ(static_cast<int>(*mode), static_cast<int>(M::posted_retry)) << describe(row);
  }
}

// What each layer asks of a mode: returns done, queues a refusal, waits in
// the post, takes only an arrived message.
TEST(PostMode, EachModeAnswersItsReaders) {
  struct answers_t {
    post_mode_t mode;
    bool returns_done, queues_refusal, waits_in_post, takes_arrived_only;
  };
  const answers_t answers[] = {
      {M::done_posted_retry, true, false, false, false},
      {M::posted_retry, false, false, false, false},
      {M::done_posted_queued, true, true, false, false},
      {M::posted_queued, false, true, false, false},
      {M::done_retry_now, true, false, false, true},
      {M::done_retry_waited, true, false, true, false},
      {M::done_waited, true, true, true, false},
  };
  for (const answers_t& a : answers) {
    const int mode = static_cast<int>(a.mode);
    EXPECT_EQ(lci::detail::returns_done(a.mode), a.returns_done) << "mode " << mode;
    EXPECT_EQ(lci::detail::queues_refusal(a.mode), a.queues_refusal) << "mode " << mode;
    EXPECT_EQ(lci::detail::waits_in_post(a.mode), a.waits_in_post) << "mode " << mode;
    EXPECT_EQ(lci::detail::takes_arrived_only(a.mode), a.takes_arrived_only) << "mode " << mode;
  }
}

// The table is usable at compile time (it has no state to go wrong).
static_assert(*post_mode_of(post_inputs_t{}) == M::done_posted_retry);

}  // namespace
