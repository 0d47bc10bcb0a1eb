// peer_table_t's reading of /proc/<pid>/stat: the state letter after the
// command name, whatever that name holds, and '?' for a line that ends
// before the state (is_alive() then counts the peer dead).
#include "backends/ofi/ofi_peers.hpp"

#include <gtest/gtest.h>

namespace lci::backend::ofi {
namespace {

using detail::process_state_of;

TEST(OfiPeers, TheStateFollowsTheCommandName) {
  EXPECT_EQ(process_state_of("4242 (lcirun) S 1 4242 4242 0 -1 4194560"), 'S');
  EXPECT_EQ(process_state_of("17 (ofi_dead_peer) Z 16 17 16 0 -1"), 'Z');
  EXPECT_EQ(process_state_of("1 (x) R"), 'R');
}

// A command name is the process's own choice (prctl(PR_SET_NAME)): the
// state follows the last ')'.
TEST(OfiPeers, ACommandNameMayHoldParenthesesAndSpaces) {
  EXPECT_EQ(process_state_of("99 (a) b (c) ) X 1 2 3"), 'X');
  EXPECT_EQ(process_state_of("99 (my prog) D 1"), 'D');
  EXPECT_EQ(process_state_of("99 ()) R 1"), 'R');
}

TEST(OfiPeers, ALineWithoutAStateIsUnknown) {
  EXPECT_EQ(process_state_of(""), '?');
  EXPECT_EQ(process_state_of("1 (x"), '?');
  EXPECT_EQ(process_state_of("1 (x)"), '?');
  // Ends right after ") ": the state would be one past the end.
  EXPECT_EQ(process_state_of("1 (x) "), '?');
}

}  // namespace
}  // namespace lci::backend::ofi
