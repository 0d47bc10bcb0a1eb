// Unit tests of handler_impl_t and counter_impl_t, single-threaded and with
// 4 signalling threads.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "lci/comp/counter.hpp"
#include "lci/comp/handler.hpp"

namespace {

using lci::status_t;
using lci::detail::comp_kind_t;
using lci::detail::counter_impl_t;
using lci::detail::handler_impl_t;

constexpr int threads_count = 4;

// What the handlers below saw (one test at a time uses them).
std::atomic<int> handled_count{0};
std::atomic<long> handled_tag_sum{0};
status_t last_handled;

void record_handler(status_t status) {
  last_handled = status;
  handled_count.fetch_add(1);
}

void sum_handler(status_t status) {
  handled_tag_sum.fetch_add(static_cast<long>(status.tag));
  handled_count.fetch_add(1);
}

TEST(HandlerTest, CallsTheHandlerWithTheStatus) {
  handled_count = 0;
  handler_impl_t handler(record_handler);
  EXPECT_EQ(handler.kind(), comp_kind_t::handler);
  EXPECT_EQ(handler.handler(), &record_handler);
  status_t status(lci::errorcode_t::done);
  status.rank = 5;
  status.tag = 77;
  status.buffer = &status;
  handler.signal(status);
  EXPECT_EQ(handled_count.load(), 1);
  EXPECT_EQ(last_handled.rank, 5);
  EXPECT_EQ(last_handled.tag, 77u);
  EXPECT_EQ(last_handled.buffer, &status);
  EXPECT_TRUE(last_handled.is_done());
}

TEST(HandlerTest, RejectsANullHandler) {
  EXPECT_THROW(handler_impl_t(nullptr), std::invalid_argument);
}

TEST(HandlerTest, RunsOncePerSignalFromManyThreads) {
  handled_count = 0;
  handled_tag_sum = 0;
  handler_impl_t handler(sum_handler);
  constexpr int per_thread = 10000;
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&] {
      for (int i = 1; i <= per_thread; ++i) {
        status_t status(lci::errorcode_t::done);
        status.tag = static_cast<lci::tag_t>(i);
        handler.signal(status);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(handled_count.load(), threads_count * per_thread);
  EXPECT_EQ(handled_tag_sum.load(),
            long{threads_count} * per_thread * (per_thread + 1) / 2);
}

TEST(CounterTest, CountsSignalsAndCanBeSet) {
  counter_impl_t counter;
  EXPECT_EQ(counter.kind(), comp_kind_t::counter);
  EXPECT_EQ(counter.get(), 0);
  counter.signal(status_t(lci::errorcode_t::done));
  counter.signal(status_t(lci::errorcode_t::done));
  EXPECT_EQ(counter.get(), 2);
  counter.set(-10);
  EXPECT_EQ(counter.get(), -10);
  counter.signal(status_t(lci::errorcode_t::done));
  EXPECT_EQ(counter.get(), -9);
  counter.set(std::int64_t{1} << 40);
  counter.signal(status_t(lci::errorcode_t::done));
  EXPECT_EQ(counter.get(), (std::int64_t{1} << 40) + 1);
}

// A reader that sees the count also sees what each counted signaller wrote
// before signalling (TSan reports a race otherwise).
TEST(CounterTest, CountsEverySignalFromManyThreadsAndPublishesTheirWrites) {
  counter_impl_t counter;
  constexpr int per_thread = 20000;
  std::vector<int> written(threads_count, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        if (i == per_thread - 1) written[t] = t + 1;
        counter.signal(status_t(lci::errorcode_t::done));
      }
    });
  }
  while (counter.get() < threads_count * per_thread) std::this_thread::yield();
  for (int t = 0; t < threads_count; ++t) EXPECT_EQ(written[t], t + 1);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter.get(), threads_count * per_thread);
}

}  // namespace
