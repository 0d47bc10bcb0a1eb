// schedule_t's and check_steps()'s limits, without a network: a step is the
// tag field of a collective's messages (lci/collective/collective.hpp), so an
// algorithm may use steps 0 .. steps_max - 1 and need at most steps_max.
// And the automatic choice of algorithm at each limit of the table "Which
// algorithm, when" (docs/design/collectives.md): both algorithms deliver at
// any size, so only the choice itself can show a threshold off by one.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "lci/collective/collective.hpp"

namespace {

using lci::allreduce_algorithm_t;
using lci::broadcast_algorithm_t;
using lci::detail::collective::alltoall_in_one_round;
using lci::detail::collective::check_steps;
using lci::detail::collective::choose_allreduce;
using lci::detail::collective::choose_broadcast;
using lci::detail::collective::ring_bytes_min;
using lci::detail::collective::short_bytes_max;
using lci::detail::collective::round_t;
using lci::detail::collective::schedule_t;
using lci::detail::collective::steps_max;

TEST(CollectiveSteps, AnAlgorithmMayNeedExactlyStepsMax) {
  EXPECT_NO_THROW(check_steps(steps_max, "test"));
  EXPECT_THROW(check_steps(steps_max + 1, "test"), std::invalid_argument);
}

TEST(CollectiveSteps, TheLastStepFitsTheTagAndTheNextDoesNot) {
  schedule_t schedule(0, 2, sizeof(std::uint64_t), nullptr);
  round_t& round = schedule.add_round();
  std::uint64_t item = 0;
  schedule.send(round, 1, &item, sizeof(item), steps_max - 1);
  schedule.recv(round, 1, &item, sizeof(item), steps_max - 1);
  EXPECT_EQ(round.transfers.size(), 2u);
  EXPECT_DEATH(schedule.send(round, 1, &item, sizeof(item), steps_max),
               "a collective step outside its tag field");
  EXPECT_DEATH(schedule.recv(round, 1, &item, sizeof(item), steps_max),
               "a collective step outside its tag field");
}

// broadcast: the ring from ring_bytes_min on, over more than three ranks.
TEST(CollectiveChoice, BroadcastRingFromRingBytesMinOverMoreThanThreeRanks) {
  constexpr auto none = broadcast_algorithm_t::none;
  EXPECT_EQ(choose_broadcast(none, ring_bytes_min, 4), broadcast_algorithm_t::ring);
  EXPECT_EQ(choose_broadcast(none, ring_bytes_min - 1, 4), broadcast_algorithm_t::tree);
  EXPECT_EQ(choose_broadcast(none, ring_bytes_min, 3), broadcast_algorithm_t::tree);
  EXPECT_EQ(choose_broadcast(broadcast_algorithm_t::direct, ring_bytes_min, 4),
            broadcast_algorithm_t::direct);
}

// allreduce: the ring for more than short_bytes_max bytes and at least one
// item per rank.
TEST(CollectiveChoice, AllreduceRingAboveShortBytesMaxWithAnItemPerRank) {
  constexpr auto none = allreduce_algorithm_t::none;
  constexpr int ranks = 4;
  constexpr std::size_t long_bytes = short_bytes_max + 1;
  EXPECT_EQ(choose_allreduce(none, ranks, long_bytes, ranks), allreduce_algorithm_t::ring);
  EXPECT_EQ(choose_allreduce(none, ranks - 1, long_bytes, ranks), allreduce_algorithm_t::tree);
  EXPECT_EQ(choose_allreduce(none, ranks, short_bytes_max, ranks), allreduce_algorithm_t::tree);
  EXPECT_EQ(choose_allreduce(allreduce_algorithm_t::direct, ranks, long_bytes, ranks),
            allreduce_algorithm_t::direct);
}

// alltoall: one round up to short_bytes_max a message, pairwise above.
TEST(CollectiveChoice, AlltoallInOneRoundUpToShortBytesMax) {
  EXPECT_TRUE(alltoall_in_one_round(short_bytes_max));
  EXPECT_FALSE(alltoall_in_one_round(short_bytes_max + 1));
}

}  // namespace
