// Unit tests of hazard_slots_t's slot-index checks: a slot index is the
// caller's, so the one past the last must abort, not read or write past the
// slots. (The protocol itself is tested by the LCRQ's model checks and by
// hazard_slots_sb_test.)
#include "lci/cq/detail/hazard_slots.hpp"

#include <gtest/gtest.h>

#include "lci/util/atomic.hpp"

namespace {

using lci::cq::detail::hazard_slots_max;
using lci::cq::detail::hazard_slots_t;

struct node_t {
  int unused = 0;
};

TEST(HazardSlots, TheLastSlotIsUsable) {
  node_t node;
  lci::util::atomic<node_t*> source{&node};
  hazard_slots_t<node_t> hazards;
  // Claim every slot: the last one claimed is hazard_slots_max - 1 or below.
  std::size_t slots_claimed[hazard_slots_max];
  for (std::size_t i = 0; i < hazard_slots_max; ++i) {
    slots_claimed[i] = hazards.acquire(source).first;
  }
  for (std::size_t slot : slots_claimed) {
    EXPECT_LT(slot, hazard_slots_max);
    EXPECT_EQ(hazards.protect(slot, source), &node);
  }
  EXPECT_TRUE(hazards.is_protected(&node, hazard_slots_max));
  for (std::size_t slot : slots_claimed) hazards.release(slot);
  EXPECT_TRUE(hazards.all_released());
  EXPECT_FALSE(hazards.is_protected(&node, hazard_slots_max));
}

TEST(HazardSlotsDeathTest, ReleaseOfTheSlotPastTheLastAborts) {
  EXPECT_DEATH(
      {
        hazard_slots_t<node_t> hazards;
        hazards.release(hazard_slots_max);
      },
      "hazard slot out of range");
}

#if defined(LCI_DEBUG) && LCI_DEBUG
// protect()'s check is a debug assertion (--config=tsan/asan).
TEST(HazardSlotsDeathTest, ProtectOfTheSlotPastTheLastAborts) {
  EXPECT_DEATH(
      {
        node_t node;
        lci::util::atomic<node_t*> source{&node};
        hazard_slots_t<node_t> hazards;
        hazards.protect(hazard_slots_max, source);
      },
      "hazard slot out of range");
}
#endif

}  // namespace
