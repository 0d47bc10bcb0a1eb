// The bounds on posting an operation again after its connection broke
// (backends/ofi/ofi_repost_limits.hpp), at their limits: the last repost
// allowed and the first refused; the longest message posted again and one
// byte more; RMAs and notices of any length.
#include "backends/ofi/ofi_repost_limits.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>

#include "backends/backend.hpp"
#include "backends/ofi/ofi_op_table.hpp"

namespace lci::backend::ofi {
namespace {

using backend::net_opcode_t;

op_t op_of(net_opcode_t opcode, std::size_t length, std::uint8_t reposts) {
  op_t op;
  op.opcode = opcode;
  op.length = length;
  op.reposts = reposts;
  return op;
}

TEST(OfiRepostLimits, AnOpIsPostedAgainFewerThanConnectionRepostsMaxTimes) {
  for (net_opcode_t opcode : {net_opcode_t::send, net_opcode_t::write, net_opcode_t::read}) {
    EXPECT_TRUE(within_repost_limits(op_of(opcode, 8, 0)));
    EXPECT_TRUE(within_repost_limits(op_of(opcode, 8, connection_reposts_max - 1)));
    EXPECT_FALSE(within_repost_limits(op_of(opcode, 8, connection_reposts_max)));
  }
}

TEST(OfiRepostLimits, AMessageUpToSendRepostSizeMax) {
  EXPECT_TRUE(within_repost_limits(op_of(net_opcode_t::send, 0, 0)));
  EXPECT_TRUE(within_repost_limits(op_of(net_opcode_t::send, send_repost_size_max, 0)));
  EXPECT_FALSE(within_repost_limits(op_of(net_opcode_t::send, send_repost_size_max + 1, 0)));
}

// A notice (an emulated put-with-immediate's, on its write's op, which keeps
// the write's length) sends zero bytes: it is posted again after a write of
// any length, up to the repost count. Counted as a message of the write's
// length, the notice of a put over send_repost_size_max would fail as if its
// live target had crashed.
TEST(OfiRepostLimits, ANoticeWhateverItsWritesLength) {
  for (std::size_t length : {std::size_t{0}, send_repost_size_max,
                             send_repost_size_max + 1, std::size_t{1} << 20}) {
    op_t notice = op_of(net_opcode_t::write, length, 0);
    notice.is_notice = true;
    EXPECT_TRUE(within_repost_limits(notice)) << length;
    notice.reposts = connection_reposts_max;
    EXPECT_FALSE(within_repost_limits(notice)) << length;
  }
}

TEST(OfiRepostLimits, AnRmaOfAnyLength) {
  EXPECT_TRUE(within_repost_limits(op_of(net_opcode_t::write, send_repost_size_max + 1, 0)));
  EXPECT_TRUE(within_repost_limits(op_of(net_opcode_t::read, std::size_t{1} << 30, 0)));
}

}  // namespace
}  // namespace lci::backend::ofi
