// idle_yield_t and LCI_PROGRESS_POLLS_BEFORE_YIELD (lci/progress/idle_yield.hpp):
// when a thread's progress calls say "yield", and how the count is configured.
#include "lci/progress/idle_yield.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace lci::detail {
namespace {

// The 1-based indices, among `calls` empty calls in a row, of those that
// said yield.
std::string yields_among_empty_calls(idle_yield_t& idle, std::uint32_t polls, int calls) {
  std::string yields;
  for (int i = 1; i <= calls; ++i) {
    if (idle.note(false, polls)) yields += std::to_string(i) + " ";
  }
  return yields;
}

TEST(IdleYield, YieldsOnEveryNthEmptyCallInARow) {
  idle_yield_t idle;
  EXPECT_EQ(yields_among_empty_calls(idle, 4, 13), "4 8 12 ");
  idle_yield_t every;
  EXPECT_EQ(yields_among_empty_calls(every, 1, 3), "1 2 3 ");
}

TEST(IdleYield, AProgressingCallStartsTheCountAgain) {
  idle_yield_t idle;
  EXPECT_EQ(yields_among_empty_calls(idle, 4, 3), "");
  EXPECT_FALSE(idle.note(true, 4));
  // Three empty calls before the progress do not count toward the next yield.
  EXPECT_EQ(yields_among_empty_calls(idle, 4, 5), "4 ");
}

TEST(IdleYield, ZeroNeverYields) {
  idle_yield_t idle;
  EXPECT_EQ(yields_among_empty_calls(idle, 0, 100000), "");
}

class PollsBeforeYieldEnv : public ::testing::Test {
 protected:
  static constexpr const char* variable = "LCI_PROGRESS_POLLS_BEFORE_YIELD";
  void TearDown() override { unsetenv(variable); }
};

TEST_F(PollsBeforeYieldEnv, UnsetIsTheDefault) {
  unsetenv(variable);
  EXPECT_EQ(polls_before_yield(), polls_before_yield_default);
}

TEST_F(PollsBeforeYieldEnv, ACountIsTaken) {
  setenv(variable, "0", 1);
  EXPECT_EQ(polls_before_yield(), 0u);
  setenv(variable, "1000", 1);
  EXPECT_EQ(polls_before_yield(), 1000u);
  setenv(variable, "0xffffffff", 1);
  EXPECT_EQ(polls_before_yield(), 0xffffffffu);
}

TEST_F(PollsBeforeYieldEnv, AnythingElseIsRefusedNamingTheVariable) {
  for (const char* value : {"-1", "many", "0x100000000", ""}) {
    setenv(variable, value, 1);
    try {
      (void)polls_before_yield();
      ADD_FAILURE() << "'" << value << "' was taken";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(variable), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace lci::detail
