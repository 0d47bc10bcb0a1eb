// address_ranks_t and is_av_table_index (backends/ofi/ofi_address_ranks.hpp):
// the rank of each AV address, addresses at and past the table's end, and
// the bound on what fi_av_insert may hand out.
#include "backends/ofi/ofi_address_ranks.hpp"

#include <gtest/gtest.h>

#include <rdma/fabric.h>

#include <vector>

namespace lci::backend::ofi {
namespace {

// As shm numbers a later device's addresses: from where an earlier one
// stopped.
TEST(OfiAddressRanks, EachAddressMapsToItsRank) {
  const address_ranks_t ranks(std::vector<fi_addr_t>{3, 4, 5});
  EXPECT_EQ(ranks.rank_of(3), 0);
  EXPECT_EQ(ranks.rank_of(4), 1);
  EXPECT_EQ(ranks.rank_of(5), 2);
}

TEST(OfiAddressRanks, AnAddressNoRankHasMapsToMinusOne) {
  const address_ranks_t ranks(std::vector<fi_addr_t>{2, 1});
  EXPECT_EQ(ranks.rank_of(0), -1);  // below the ranks' addresses
  EXPECT_EQ(ranks.rank_of(2), 0);
  // One past the largest address: the end of the table (read past it, ASan
  // reports a heap-buffer-overflow).
  EXPECT_EQ(ranks.rank_of(3), -1);
  EXPECT_EQ(ranks.rank_of(av_address_max), -1);
  EXPECT_EQ(ranks.rank_of(FI_ADDR_NOTAVAIL), -1);
  EXPECT_EQ(address_ranks_t().rank_of(0), -1);
}

TEST(OfiAddressRanks, RanksSharingAnAddressMapItToTheHighest) {
  const address_ranks_t ranks(std::vector<fi_addr_t>{0, 0, 0});
  EXPECT_EQ(ranks.rank_of(0), 2);
  EXPECT_EQ(ranks.rank_of(1), -1);
}

TEST(OfiAddressRanks, AnAvTableIndexIsBelowAvAddressMax) {
  EXPECT_TRUE(is_av_table_index(0));
  EXPECT_TRUE(is_av_table_index(av_address_max - 1));
  EXPECT_FALSE(is_av_table_index(av_address_max));
  EXPECT_FALSE(is_av_table_index(FI_ADDR_NOTAVAIL));
}

}  // namespace
}  // namespace lci::backend::ofi
