// Unit tests of hazard_slots_t's slot-index checks: a slot index is the
// caller's, so the one past the last must abort, not read or write past the
// slots. (The protocol itself is tested by the LCRQ's model checks and by
// hazard_slots_sb_test.)
#include "lci/cq/detail/hazard_slots.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "lci/util/atomic.hpp"

namespace {

using lci::cq::detail::hazard_slots_max;
using lci::cq::detail::hazard_slots_t;

struct node_t {
  int unused = 0;
};

// On the heap, so that under --config=asan a scan past the last slot reads
// a redzone (inside a larger object it would read a neighbour unnoticed).
TEST(HazardSlots, EverySlotIsUsableAndScanned) {
  node_t node;
  lci::util::atomic<node_t*> source{&node};
  auto hazards = std::make_unique<hazard_slots_t<node_t>>();
  // Claim every slot, so the last one is among them.
  std::size_t slots_claimed[hazard_slots_max];
  for (std::size_t i = 0; i < hazard_slots_max; ++i) {
    slots_claimed[i] = hazards->acquire(source).first;
  }
  for (std::size_t slot : slots_claimed) {
    EXPECT_LT(slot, hazard_slots_max);
    EXPECT_EQ(hazards->protect(slot, source), &node);
  }
  // A scan that skips one claimed slot still finds the others.
  EXPECT_TRUE(hazards->is_protected(&node, slots_claimed[0]));
  for (std::size_t slot : slots_claimed) hazards->release(slot);
  EXPECT_TRUE(hazards->all_released());
  EXPECT_FALSE(hazards->is_protected(&node, slots_claimed[0]));
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
