// LCT_pcounter_*: counters sum every thread's adds, timers sum intervals,
// trends are sampled by record; dump prints it all. Also thread ids and the
// clock (lct.h, "Threads", "Time").
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "lct.h"

namespace {

// dump's lines, by "<name> <kind>" (samples: the last one).
std::map<std::string, std::vector<long long>> dumped(LCT_pcounter_ctx_t ctx,
                                                     std::size_t* samples_count) {
  char* buffer = nullptr;
  std::size_t size = 0;
  FILE* out = open_memstream(&buffer, &size);
  LCT_pcounter_dump(ctx, out);
  std::fclose(out);
  std::istringstream in(std::string(buffer, size));
  std::free(buffer);
  std::map<std::string, std::vector<long long>> result;
  *samples_count = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string ctx_name, name, kind;
    fields >> ctx_name >> name >> kind;
    EXPECT_EQ(ctx_name, "test") << line;
    std::vector<long long> numbers;
    for (long long number; fields >> number;) numbers.push_back(number);
    if (kind == "sample") ++*samples_count;
    result[name + " " + kind] = numbers;
  }
  return result;
}

TEST(LctPcounter, ThreadsSumAndTimersAndTrends) {
  constexpr int threads_count = 4, adds_count = 5000;
  LCT_pcounter_ctx_t ctx = LCT_pcounter_ctx_alloc("test");
  const auto plain = LCT_pcounter_register(ctx, "plain", LCT_PCOUNTER_NONE);
  const auto counter = LCT_pcounter_register(ctx, "counter", LCT_PCOUNTER_COUNTER);
  const auto trend = LCT_pcounter_register(ctx, "trend", LCT_PCOUNTER_TREND);
  const auto timer = LCT_pcounter_register(ctx, "timer", LCT_PCOUNTER_TIMER);
  std::vector<std::thread> threads;
  long long expected_plain = 0;
  for (int t = 0; t < threads_count; ++t) {
    for (int i = 0; i < adds_count; ++i) expected_plain += t + i;
    threads.emplace_back([&, t] {
      for (int i = 0; i < adds_count; ++i) {
        LCT_pcounter_add(ctx, plain, t + i);
        LCT_pcounter_add(ctx, counter, 1);
        LCT_pcounter_add(ctx, trend, 2);
        LCT_pcounter_startt(ctx, timer, 1000 * i);
        LCT_pcounter_endt(ctx, timer, 1000 * i + t);
        if (t == 0 && i % 1000 == 0) LCT_pcounter_record(ctx);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  LCT_pcounter_record(ctx);
  std::size_t samples_count = 0;
  const auto lines = dumped(ctx, &samples_count);
  EXPECT_EQ(lines.at("plain counter"), std::vector<long long>{expected_plain});
  EXPECT_EQ(lines.at("counter counter"),
            std::vector<long long>{threads_count * adds_count});
  EXPECT_EQ(lines.at("trend trend"), std::vector<long long>{2 * threads_count * adds_count});
  long long expected_time = 0;
  for (int t = 0; t < threads_count; ++t) expected_time += static_cast<long long>(t) * adds_count;
  EXPECT_EQ(lines.at("timer timer"),
            (std::vector<long long>{threads_count * adds_count, expected_time}));
  // One sample per record (the trend is the only trend counter); the last,
  // after the joins, holds the final sum.
  EXPECT_EQ(samples_count, static_cast<std::size_t>(adds_count / 1000 + 1));
  ASSERT_EQ(lines.at("trend sample").size(), 2u);
  EXPECT_EQ(lines.at("trend sample")[1], 2 * threads_count * adds_count);
  LCT_pcounter_ctx_free(&ctx);
  EXPECT_EQ(ctx, nullptr);
}

TEST(LctThread, IdsAreUniqueAndCounted) {
  constexpr int threads_count = 4;
  std::mutex mutex;
  std::set<int> ids;
  std::vector<std::thread> threads;
  for (int t = 0; t < threads_count; ++t) {
    threads.emplace_back([&] {
      const int id = LCT_get_thread_id();
      EXPECT_EQ(LCT_get_thread_id(), id);  // stable
      std::lock_guard<std::mutex> guard(mutex);
      ids.insert(id);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(ids.size(), static_cast<std::size_t>(threads_count));
  EXPECT_GE(LCT_get_nthreads(), *ids.rbegin() + 1);
}

TEST(LctTime, MonotonicNanosecondsAndConversions) {
  const LCT_time_t before = LCT_now();
  const auto clock_before = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const auto clock_after = std::chrono::steady_clock::now();
  const LCT_time_t elapsed = LCT_now() - before;
  // Both clocks are CLOCK_MONOTONIC; LCT's interval encloses the other.
  EXPECT_GE(elapsed, std::chrono::duration_cast<std::chrono::nanoseconds>(
                         clock_after - clock_before).count());
  EXPECT_DOUBLE_EQ(LCT_time_to_ns(elapsed), static_cast<double>(elapsed));
  EXPECT_DOUBLE_EQ(LCT_time_to_us(elapsed) * 1e3, LCT_time_to_ns(elapsed));
  EXPECT_DOUBLE_EQ(LCT_time_to_ms(elapsed) * 1e3, LCT_time_to_us(elapsed));
  EXPECT_DOUBLE_EQ(LCT_time_to_s(elapsed) * 1e3, LCT_time_to_ms(elapsed));
}

}  // namespace
