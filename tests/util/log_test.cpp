// lci/util/log.hpp: LCI_LOG prints a message exactly when its level is at
// most LCI_LOG_LEVEL's (warn when unset, as the BUILD targets run it), and
// a disabled message does not evaluate its arguments.
#include <gtest/gtest.h>
#include <strings.h>

#include <cstdlib>
#include <string>

#include "lci/util/log.hpp"

namespace {

using lci::util::log::level_t;

// The level LCI_LOG_LEVEL names, warn when unset.
int configured_level() {
  const char* names[] = {"error", "warn", "diag", "info", "debug", "trace"};
  const char* level = std::getenv("LCI_LOG_LEVEL");
  if (level == nullptr) return static_cast<int>(level_t::warn);
  for (int i = 0; i < 6; ++i)
    if (strcasecmp(names[i], level) == 0) return i;
  ADD_FAILURE() << "LCI_LOG_LEVEL=" << level << " is not a level name";
  return -1;
}

int evaluated_count = 0;
int evaluated() { return ++evaluated_count; }

TEST(Log, PrintsUpToTheConfiguredLevel) {
  const int level = configured_level();
  testing::internal::CaptureStderr();
  LCI_LOG(error, "test", "at error %d\n", evaluated());
  LCI_LOG(warn, "test", "at warn %d\n", evaluated());
  LCI_LOG(info, "test", "at info %d\n", evaluated());
  LCI_LOG(debug, "test", "at debug %d\n", evaluated());
  LCI_LOG(trace, "test", "at trace %d\n", evaluated());
  const std::string log = testing::internal::GetCapturedStderr();
  const std::pair<const char*, level_t> messages[] = {{"at error", level_t::error},
                                                      {"at warn", level_t::warn},
                                                      {"at info", level_t::info},
                                                      {"at debug", level_t::debug},
                                                      {"at trace", level_t::trace}};
  int printed_count = 0;
  for (const auto& [text, message_level] : messages) {
    const bool printed = log.find(text) != std::string::npos;
    printed_count += printed;
    EXPECT_EQ(printed, static_cast<int>(message_level) <= level) << text << "; log:\n" << log;
    EXPECT_EQ(lci::util::log::enabled(message_level), static_cast<int>(message_level) <= level)
        << text;
  }
  // Only the printed messages' arguments ran.
  EXPECT_EQ(evaluated_count, printed_count);
  EXPECT_NE(log.find("lci:test:"), std::string::npos) << log;
}

}  // namespace
