// schedule_t's and check_steps()'s limits, without a network: a step is the
// tag field of a collective's messages (lci/collective/collective.hpp), so an
// algorithm may use steps 0 .. steps_max - 1 and need at most steps_max.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

#include "lci/collective/collective.hpp"

namespace {

using lci::detail::collective::check_steps;
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

}  // namespace
