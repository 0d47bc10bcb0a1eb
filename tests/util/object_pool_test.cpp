// util::object_pool_t: a bounded pool hands out at most objects_max objects,
// answers nullptr (never allocates) when empty, reuses what comes back, and
// under concurrent takers and givers never hands one slot to two owners.
#include "lci/util/object_pool.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

struct record_t {
  std::uint64_t owner = 0;  // who holds it now (0: just constructed)
  std::uint64_t payload[3] = {};
};

TEST(ObjectPool, HandsOutAtMostItsBoundThenNothing) {
  lci::util::object_pool_t<record_t> pool(4);
  std::vector<record_t*> taken;
  for (int i = 0; i < 4; ++i) {
    record_t* record = pool.take();
    ASSERT_NE(record, nullptr);
    EXPECT_EQ(record->owner, 0u) << "taken objects are default-constructed";
    EXPECT_TRUE(pool.owns(record));
    record->owner = 1;
    taken.push_back(record);
  }
  EXPECT_EQ(pool.take(), nullptr) << "an empty pool answers nullptr";
  EXPECT_EQ(pool.taken_count(), 4u);
  pool.give_back(taken.back());
  record_t* again = pool.take();
  EXPECT_EQ(again, taken.back()) << "the slot given back is the one reused";
  EXPECT_EQ(again->owner, 0u);
  taken.back() = again;
  for (record_t* record : taken) pool.give_back(record);
  EXPECT_EQ(pool.taken_count(), 0u);
  EXPECT_EQ(pool.taken_high_water(), 4u);
}

// The counts a test of bounded memory reads: taken_count() is what is out
// now and taken_high_water() the most out at once, through a seeded walk of
// takes and give-backs in every order (LIFO and not), checked against a
// count kept beside the pool after every step.
TEST(ObjectPool, CountsFollowTakesAndGiveBacks) {
  constexpr std::size_t objects_max = 16;
  lci::util::object_pool_t<record_t> pool(objects_max);
  std::vector<record_t*> held;
  std::size_t most_held = 0;
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  for (int step = 0; step < 20000; ++step) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    // Drifts between a nearly empty and a nearly full pool.
    const bool filling = (step / 500) % 2 == 0;
    const bool take = held.empty() || (state % 8) < (filling ? 5u : 3u);
    if (take) {
      record_t* record = pool.take();
      if (held.size() == objects_max) {
        ASSERT_EQ(record, nullptr);
      } else {
        ASSERT_NE(record, nullptr);
        held.push_back(record);
      }
    } else {
      const std::size_t which = static_cast<std::size_t>(state >> 32) % held.size();
      pool.give_back(held[which]);
      held[which] = held.back();
      held.pop_back();
    }
    most_held = std::max(most_held, held.size());
    ASSERT_EQ(pool.taken_count(), held.size()) << "step " << step;
    ASSERT_EQ(pool.taken_high_water(), most_held) << "step " << step;
  }
  for (record_t* record : held) pool.give_back(record);
  EXPECT_EQ(pool.taken_count(), 0u);
}

// take_up_to takes what the pool holds, at most the count asked for;
// give_back_all returns a batch in one piece, its first object on top.
TEST(ObjectPool, BatchesTakeWhatIsThereAndComeBackWhole) {
  lci::util::object_pool_t<record_t> pool(5);
  record_t* first[3] = {};
  ASSERT_EQ(pool.take_up_to(first, 3), 3u);
  record_t* rest[4] = {};
  ASSERT_EQ(pool.take_up_to(rest, 4), 2u) << "only two were left";
  record_t* none[1] = {};
  EXPECT_EQ(pool.take_up_to(none, 1), 0u);
  EXPECT_EQ(pool.taken_count(), 5u);
  for (record_t* record : first) {
    EXPECT_EQ(record->owner, 0u) << "batch-taken objects are default-constructed";
    record->owner = 7;
  }
  pool.give_back_all(first, 3);
  EXPECT_EQ(pool.taken_count(), 2u);
  EXPECT_EQ(pool.take(), first[0]) << "the batch's first object is on top";
  EXPECT_EQ(pool.take(), first[1]);
  EXPECT_EQ(pool.take(), first[2]);
  EXPECT_EQ(pool.taken_high_water(), 5u);
}

TEST(ObjectPool, ForeignObjectsAreNotOwned) {
  lci::util::object_pool_t<record_t> pool(2);
  record_t outside;
  EXPECT_FALSE(pool.owns(&outside));
}

// Four threads take and give back, often from an empty pool; each marks
// what it holds and checks the mark is still its own before giving it back:
// a slot handed to two threads at once (a lost ABA check) shows as a
// foreign mark.
TEST(ObjectPool, ConcurrentTakersNeverShareASlot) {
  constexpr std::size_t objects_max = 8;
  constexpr int threads_count = 4;
  constexpr int rounds = 20000;
  lci::util::object_pool_t<record_t> pool(objects_max);
  std::vector<int> conflicts(threads_count, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&pool, &conflicts, t] {
      const std::uint64_t me = static_cast<std::uint64_t>(t) + 1;
      std::vector<record_t*> held;
      for (int round = 0; round < rounds; ++round) {
        if (held.size() < 3) {
          // Odd threads take in batches, even ones singly.
          record_t* got[2] = {};
          const std::size_t count =
              t % 2 == 1 ? pool.take_up_to(got, 3 - held.size() > 1 ? 2 : 1)
                         : ((got[0] = pool.take()) != nullptr ? 1 : 0);
          for (std::size_t i = 0; i < count; ++i) {
            if (got[i]->owner != 0) ++conflicts[static_cast<std::size_t>(t)];
            got[i]->owner = me;
            got[i]->payload[0] = static_cast<std::uint64_t>(round);
            held.push_back(got[i]);
          }
        }
        if (!held.empty() && (round % 3 != 0 || held.size() == 3)) {
          record_t* record = held.back();
          held.pop_back();
          if (record->owner != me) ++conflicts[static_cast<std::size_t>(t)];
          pool.give_back(record);
        }
      }
      if (!held.empty()) pool.give_back_all(held.data(), held.size());
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < threads_count; ++t) EXPECT_EQ(conflicts[static_cast<std::size_t>(t)], 0);
  EXPECT_EQ(pool.taken_count(), 0u);
  EXPECT_LE(pool.taken_high_water(), objects_max);
  // Every slot is back: the pool hands out exactly objects_max again.
  std::vector<record_t*> all;
  while (record_t* record = pool.take()) all.push_back(record);
  EXPECT_EQ(all.size(), objects_max);
  for (record_t* record : all) pool.give_back(record);
}

}  // namespace
