// Unit tests of hazard_slots_t's two slot regions (owned slots stay
// published, claimed ones are freed) and of its slot-index checks: a slot
// index is the caller's, so the one past the last must abort, not read or
// write past the slots. (The protocol itself is tested by the LCRQ's model
// checks and by hazard_slots_sb_test.)
#include "lci/cq/detail/hazard_slots.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "lci/util/atomic.hpp"

namespace {

using lci::cq::detail::hazard_owned_slots_max;
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
  // Every owned slot through its own thread index, then every claimed one
  // through thread indices whose probes start at each of them in turn, so
  // the last slot is among them.
  std::size_t slots_taken[hazard_slots_max];
  for (std::size_t i = 0; i < hazard_slots_max; ++i) {
    slots_taken[i] = hazards->acquire(source, i).first;
  }
  for (std::size_t i = 0; i < hazard_slots_max; ++i) {
    EXPECT_EQ(slots_taken[i], i) << "owned slots first, then claims in probe order";
    EXPECT_EQ(hazards->protect(slots_taken[i], source), &node);
  }
  // A scan that skips one slot still finds the others.
  EXPECT_TRUE(hazards->is_protected(&node, slots_taken[0]));
  EXPECT_FALSE(hazards->all_released());
  for (std::size_t slot : slots_taken) hazards->release(slot);
  EXPECT_TRUE(hazards->all_released());
  // The owned slots stay published until their owners' next operations
  // point them elsewhere.
  EXPECT_TRUE(hazards->is_protected(&node, hazard_slots_max));
  node_t parked;
  lci::util::atomic<node_t*> parking{&parked};
  for (std::size_t owner = 0; owner < hazard_owned_slots_max; ++owner) {
    hazards->release(hazards->acquire(parking, owner).first);
  }
  EXPECT_FALSE(hazards->is_protected(&node, hazard_slots_max));
}

// An owned slot keeps naming what its last operation used, and its next
// operation re-points it when the source moved on: the node it left is then
// unprotected (a reclaimer may reuse it), the new one protected.
TEST(HazardSlots, AnOwnedSlotFollowsTheSource) {
  node_t first, second;
  lci::util::atomic<node_t*> source{&first};
  auto hazards = std::make_unique<hazard_slots_t<node_t>>();
  constexpr std::size_t owner = hazard_owned_slots_max - 1;
  auto [slot, value] = hazards->acquire(source, owner);
  EXPECT_EQ(slot, owner);
  EXPECT_EQ(value, &first);
  hazards->release(slot);
  EXPECT_TRUE(hazards->is_protected(&first, hazard_slots_max));
  // The same source value again: the same slot, still protecting it.
  EXPECT_EQ(hazards->acquire(source, owner).second, &first);
  hazards->release(slot);
  EXPECT_TRUE(hazards->is_protected(&first, hazard_slots_max));
  source.store(&second, lci::util::mo_seq_cst);
  EXPECT_EQ(hazards->acquire(source, owner).second, &second);
  hazards->release(slot);
  EXPECT_FALSE(hazards->is_protected(&first, hazard_slots_max));
  EXPECT_TRUE(hazards->is_protected(&second, hazard_slots_max));
}

// A claimed slot is freed by release(): two claims in turn from one thread
// index get the same slot, and nothing stays protected.
TEST(HazardSlots, AClaimedSlotIsFreedOnRelease) {
  node_t node;
  lci::util::atomic<node_t*> source{&node};
  auto hazards = std::make_unique<hazard_slots_t<node_t>>();
  const std::size_t index = hazard_owned_slots_max + 3;
  const std::size_t slot = hazards->acquire(source, index).first;
  EXPECT_GE(slot, hazard_owned_slots_max);
  EXPECT_TRUE(hazards->is_protected(&node, hazard_slots_max));
  hazards->release(slot);
  EXPECT_FALSE(hazards->is_protected(&node, hazard_slots_max));
  EXPECT_EQ(hazards->acquire(source, index).first, slot);
  hazards->release(slot);
  EXPECT_TRUE(hazards->all_released());
}

// The first thread index past the owned ones claims like any other: it
// must not take the first claimed slot as if it owned it, over a claim
// already holding it (two holders of one slot: the first one's release
// would unprotect what the second still uses).
TEST(HazardSlots, TheFirstIndexPastTheOwnedOnesClaims) {
  node_t node;
  lci::util::atomic<node_t*> source{&node};
  auto hazards = std::make_unique<hazard_slots_t<node_t>>();
  // Its probes start at the first claimed slot, as those of the index
  // hazard_owned_slots_max do.
  const std::size_t first = hazards->acquire(source, 2 * hazard_owned_slots_max).first;
  EXPECT_EQ(first, hazard_owned_slots_max);
  const std::size_t second = hazards->acquire(source, hazard_owned_slots_max).first;
  EXPECT_NE(second, first);
  hazards->release(second);
  EXPECT_TRUE(hazards->is_protected(&node, hazard_slots_max)) << "the first claim still holds";
  hazards->release(first);
  EXPECT_TRUE(hazards->all_released());
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
