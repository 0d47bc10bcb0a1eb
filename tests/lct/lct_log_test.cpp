// LCT logging: a context prints exactly the messages at or below its level
// whose tags pass its filters, to the file it names; the default context
// takes its level from LCT_LOG_LEVEL; a false LCT_Assert aborts.
#include <stdlib.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "lct.h"

namespace {

const char* const level_names[] = {"error", "warn", "diag", "info", "debug", "trace"};
constexpr int levels_count = sizeof(level_names) / sizeof(level_names[0]);

std::string temp_path(const std::string& name) {
  const char* dir = getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Logs one message per level, tagged and worded by the level's name, into a
// context made from the given settings; returns the file's lines.
std::vector<std::string> log_every_level(const char* level_str, const char* whitelist,
                                         const char* blacklist) {
  const std::string path = temp_path("log_every_level.txt");
  LCT_log_ctx_t ctx = LCT_log_ctx_alloc(
      level_names, levels_count, LCT_LOG_WARN, "test", const_cast<char*>(path.c_str()),
      const_cast<char*>(level_str), const_cast<char*>(whitelist),
      const_cast<char*>(blacklist));
  for (int level = 0; level < levels_count; ++level)
    LCT_Log(ctx, level, level_names[level], "message at %s\n", level_names[level]);
  LCT_log_ctx_free(&ctx);
  EXPECT_EQ(ctx, nullptr);
  return lines_of(path);
}

bool printed(const std::vector<std::string>& lines, const char* level_name) {
  const std::string wanted = std::string("message at ") + level_name;
  for (const std::string& line : lines)
    if (line.find(wanted) != std::string::npos) return true;
  return false;
}

TEST(LctLog, PrintsUpToItsLevel) {
  for (int threshold = 0; threshold < levels_count; ++threshold) {
    const auto lines = log_every_level(level_names[threshold], nullptr, nullptr);
    EXPECT_EQ(static_cast<int>(lines.size()), threshold + 1) << level_names[threshold];
    for (int level = 0; level < levels_count; ++level)
      EXPECT_EQ(printed(lines, level_names[level]), level <= threshold)
          << "threshold " << level_names[threshold] << ", message " << level_names[level];
  }
}

TEST(LctLog, LevelByNumberOrCaseAndDefaultWhenUnknown) {
  EXPECT_EQ(log_every_level("4", nullptr, nullptr).size(), 5u);
  EXPECT_EQ(log_every_level("INFO", nullptr, nullptr).size(), 4u);
  // Unknown and unset: the default passed to alloc (warn: two levels).
  EXPECT_EQ(log_every_level("verbose", nullptr, nullptr).size(), 2u);
  EXPECT_EQ(log_every_level(nullptr, nullptr, nullptr).size(), 2u);
}

TEST(LctLog, WhitelistAndBlacklistFilterTags) {
  const auto white = log_every_level("trace", "info,error", nullptr);
  EXPECT_EQ(white.size(), 2u);
  EXPECT_TRUE(printed(white, "info"));
  EXPECT_TRUE(printed(white, "error"));
  const auto black = log_every_level("trace", nullptr, "debug,warn");
  EXPECT_EQ(black.size(), static_cast<std::size_t>(levels_count - 2));
  EXPECT_FALSE(printed(black, "debug"));
  EXPECT_FALSE(printed(black, "warn"));
}

TEST(LctLog, LineCarriesContextTagRankAndWhere) {
  LCT_set_rank(7);
  const auto lines = log_every_level("error", nullptr, nullptr);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("test:error:7:", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("lct_log_test.cpp:"), std::string::npos) << lines[0];
  LCT_set_rank(-1);
}

TEST(LctLog, PercentInFileNameIsTheRank) {
  LCT_set_rank(3);
  const std::string pattern = temp_path("rank_%.txt");
  LCT_log_ctx_t ctx = LCT_log_ctx_alloc(level_names, levels_count, LCT_LOG_WARN, "test",
                                        const_cast<char*>(pattern.c_str()), nullptr,
                                        nullptr, nullptr);
  LCT_Warn(ctx, "to rank 3's file\n");
  LCT_log_ctx_free(&ctx);
  LCT_set_rank(-1);
  const auto lines = lines_of(temp_path("rank_3.txt"));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("to rank 3's file"), std::string::npos);
}

TEST(LctLog, DefaultContextFollowsLctLogLevel) {
  ASSERT_EQ(setenv("LCT_LOG_LEVEL", "debug", 1), 0);
  LCT_init();
  EXPECT_EQ(LCT_log_get_level(LCT_log_ctx_default), LCT_LOG_DEBUG);
  LCT_init();  // reference counted: the context stays until the last fina
  LCT_fina();
  EXPECT_NE(LCT_log_ctx_default, nullptr);
  LCT_fina();
  EXPECT_EQ(LCT_log_ctx_default, nullptr);
  ASSERT_EQ(unsetenv("LCT_LOG_LEVEL"), 0);
  LCT_init();
  EXPECT_EQ(LCT_log_get_level(LCT_log_ctx_default), LCT_LOG_WARN);
  LCT_fina();
}

TEST(LctLogDeath, FalseAssertAborts) {
  LCT_Assert(nullptr, 1 + 1 == 2, "never printed\n");
  EXPECT_DEATH(LCT_Assert(nullptr, 1 + 1 == 3, "arithmetic %s\n", "broke"),
               "1 \\+ 1 == 3.*arithmetic broke");
}

}  // namespace
