// The checker itself: it accepts linearizable histories and rejects ones
// that are not, both hand-written and recorded from a deliberately wrong
// implementation.
#include "tests/linearizability/checker.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "tests/linearizability/models.hpp"
#include "tests/linearizability/runner.hpp"

namespace {

using namespace lci::linearizability;
constexpr int push = fifo_model_t::push;
constexpr int pop = fifo_model_t::pop;

operation_t op(int thread, int kind, std::uint64_t argument, std::uint64_t result,
               std::uint64_t invoke, std::uint64_t response) {
  return {thread, kind, argument, 0, result, invoke, response};
}

TEST(Checker, AcceptsSequentialFifoHistory) {
  const std::vector<operation_t> history = {
      op(0, push, 1, 1, 0, 1), op(0, push, 2, 1, 2, 3),
      op(1, pop, 0, 1, 4, 5), op(1, pop, 0, 2, 6, 7), op(1, pop, 0, 0, 8, 9)};
  EXPECT_TRUE(is_linearizable(history, fifo_model_t{}));
}

TEST(Checker, RejectsLifoOrder) {
  const std::vector<operation_t> history = {
      op(0, push, 1, 1, 0, 1), op(0, push, 2, 1, 2, 3),
      op(1, pop, 0, 2, 4, 5), op(1, pop, 0, 1, 6, 7)};
  EXPECT_FALSE(is_linearizable(history, fifo_model_t{}));
}

TEST(Checker, OverlappingOperationsMayTakeEitherOrder) {
  // Both pushes overlap; the pops observe 2 before 1: fine, since push(2)
  // may linearize first.
  const std::vector<operation_t> history = {
      op(0, push, 1, 1, 0, 10), op(1, push, 2, 1, 1, 9),
      op(2, pop, 0, 2, 11, 12), op(2, pop, 0, 1, 13, 14)};
  EXPECT_TRUE(is_linearizable(history, fifo_model_t{}));
}

TEST(Checker, RejectsValueFromTheFuture) {
  // The pop responded before the push was even invoked.
  const std::vector<operation_t> history = {op(0, pop, 0, 7, 0, 1),
                                            op(1, push, 7, 1, 2, 3)};
  EXPECT_FALSE(is_linearizable(history, fifo_model_t{}));
}

TEST(Checker, RejectsEmptyPopWhileValueWasSurelyThere) {
  const std::vector<operation_t> history = {op(0, push, 5, 1, 0, 1),
                                            op(1, pop, 0, 0, 2, 3)};
  EXPECT_FALSE(is_linearizable(history, fifo_model_t{}));
}

TEST(Checker, BoundedModelAcceptsRefusalOnlyWhenFull) {
  fifo_model_t bounded;
  bounded.capacity = 1;
  EXPECT_TRUE(is_linearizable({op(0, push, 1, 1, 0, 1), op(0, push, 2, 0, 2, 3)},
                              bounded));
  EXPECT_FALSE(is_linearizable({op(0, push, 1, 0, 0, 1)}, bounded));
}

TEST(Checker, MatchingModelIsFifoPerKey) {
  constexpr std::uint64_t recv = matching_model_t::type_bit;
  const int insert = 0;
  auto ins = [&](std::uint64_t key, std::uint64_t value_and_type,
                 std::uint64_t result, std::uint64_t t) {
    return operation_t{0, insert, key, value_and_type, result, t, t + 1};
  };
  // Two sends on key 9, then a receive: it must match the older send (11).
  EXPECT_TRUE(is_linearizable({ins(9, 11, 0, 0), ins(9, 12, 0, 2),
                               ins(9, 50 | recv, 11, 4)},
                              matching_model_t{}));
  EXPECT_FALSE(is_linearizable({ins(9, 11, 0, 0), ins(9, 12, 0, 2),
                                ins(9, 50 | recv, 12, 4)},
                               matching_model_t{}));
}

// Mutex-protected reference implementations recorded from real threads.
template <bool lifo>
struct locked_queue_t {
  std::mutex mutex;
  std::vector<std::uint64_t> values;
  void push(std::uint64_t value) {
    std::lock_guard<std::mutex> guard(mutex);
    values.push_back(value);
  }
  std::uint64_t pop() {
    std::lock_guard<std::mutex> guard(mutex);
    if (values.empty()) return 0;
    std::uint64_t value;
    if (lifo) {  // the deliberately wrong variant: a stack posing as a queue
      value = values.back();
      values.pop_back();
    } else {
      value = values.front();
      values.erase(values.begin());
    }
    return value;
  }
};

template <bool lifo>
runs_summary_t run_locked_queue(int runs_count) {
  return check_runs<fifo_model_t>(
      runs_count, 3,
      [] {
        auto queue = std::make_shared<locked_queue_t<lifo>>();
        auto pushers_left = std::make_shared<std::atomic<int>>(3);
        return std::function<void(int, recorder_t&)>(
            [queue, pushers_left](int thread, recorder_t& recorder) {
              // Every thread pushes three values, then all pop. The first
              // pop of a stack returns the last value pushed, a third push
              // of its thread whose first push precedes it in real time: it
              // can never be the oldest, so every run must be rejected.
              for (std::uint64_t i = 1; i <= 3; ++i) {
                const std::uint64_t value = thread * 100 + i;
                const auto t0 = recorder.now();
                queue->push(value);
                recorder.record(thread, push, value, 0, 1, t0);
              }
              pushers_left->fetch_sub(1);
              while (pushers_left->load() > 0) std::this_thread::yield();
              for (int i = 0; i < 3; ++i) {
                const auto t0 = recorder.now();
                const std::uint64_t popped = queue->pop();
                recorder.record(thread, pop, 0, 0, popped, t0);
              }
            });
      },
      [] { return fifo_model_t{}; });
}

TEST(CheckerOnRuns, CorrectQueueIsAlwaysAccepted) {
  const auto summary = run_locked_queue<false>(200);
  EXPECT_EQ(summary.rejected_count, 0);
}

TEST(CheckerOnRuns, StackPosingAsQueueIsRejected) {
  const auto summary = run_locked_queue<true>(200);
  EXPECT_EQ(summary.rejected_count, summary.runs_count);
}

}  // namespace
